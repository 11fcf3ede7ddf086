// The predict routes' end in the service (http/hot-route.ts; the front's end: hot-predict.ts): takes a
// request whose key passes and whose pack is loaded, and analyses its image as the usual route does.
import type { HotService } from '../http/hot-route';
import type { Service } from '../service';
import { analyzeImage, predictedFigures } from './predict';

/** The service's end of the predict routes. */
export function hotService(service: Service): HotService {
  return {
    takes: (request) => service.keys.check(request.apiKey) && service.registry.get(request.model) !== undefined,
    async serve(request, body, { signal, timing }) {
      const deadline = performance.now() + service.config.requestTimeoutMs;
      const image = body.subarray(request.imageStart, request.imageEnd);
      const { model, analysis } = await analyzeImage(service.registry, request.model, image, request.threshold, { deadline, signal, timing });
      return { figures: predictedFigures(model, analysis, request.threshold), modelVersion: model.version, detection: analysis.detection };
    },
  };
}
