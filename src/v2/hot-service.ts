// The predict routes' end in the service (http/hot-route.ts; the front's end: hot-predict.ts): analyses
// a request's image as the usual route does (routes.ts).
import { errorResponse } from '../http/error-answers';
import type { HotService } from '../http/hot-route';
import { hotServiceOf, type Service } from '../service';
import { PREDICT_ROUTES, type PredictArgs } from './hot-predict';
import { analyzeImage, predictedFigures } from './predict';

export function hotService(service: Service): HotService {
  return hotServiceOf(service, PREDICT_ROUTES, errorResponse, async (request, body, options) => {
    const { threshold, imageStart, imageEnd } = request.args as PredictArgs;
    const { model, analysis } = await analyzeImage(service.registry, request.model, body.subarray(imageStart, imageEnd), threshold, options);
    return { figures: predictedFigures(model, analysis, threshold), modelVersion: model.version, detection: analysis.detection };
  });
}
