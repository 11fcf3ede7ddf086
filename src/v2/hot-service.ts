// The predict routes' end in the service (http/hot-route.ts; the front's end: hot-predict.ts): takes a
// request whose key passes and whose pack is loaded, as the usual route checks first, and analyses its
// image as the usual route does (routes.ts).
import { errorResponse } from '../http/error-answers';
import type { HotService } from '../http/hot-route';
import type { Service } from '../service';
import { PREDICT_ROUTES, type PredictArgs } from './hot-predict';
import { analyzeImage, predictedFigures } from './predict';

export function hotService(service: Service): HotService {
  return {
    routes: PREDICT_ROUTES,
    render: errorResponse,
    takes: (request) => service.keys.check(request.apiKey) && service.registry.get(request.model) !== undefined,
    async serve(request, body, { signal, timing }) {
      const deadline = performance.now() + service.config.requestTimeoutMs;
      const { threshold, imageStart, imageEnd } = request.args as PredictArgs;
      const { model, analysis } = await analyzeImage(service.registry, request.model, body.subarray(imageStart, imageEnd), threshold, { deadline, signal, timing });
      return { figures: predictedFigures(model, analysis, threshold), modelVersion: model.version, detection: analysis.detection };
    },
  };
}
