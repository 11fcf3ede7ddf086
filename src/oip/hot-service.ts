// The infer routes' end in the service (http/hot-route.ts; the front's end: hot-infer.ts): infers as
// the usual route does (rest.ts), the images viewed in the lent body again.
import type { HotService } from '../http/hot-route';
import { hotServiceOf, type Service } from '../service';
import { oipError } from './error-body';
import { callOf, INFER_ROUTES, type InferArgs, type InferFigures } from './hot-infer';
import { infer } from './infer';

export function hotInferService(service: Service): HotService {
  return hotServiceOf(service, INFER_ROUTES, oipError, async (request, body, options) => {
    const args = request.args as InferArgs;
    const answer = await infer(service.registry, callOf(args, body), options);
    const figures: InferFigures = { answer, binaryOutputs: args.binaryOutputs };
    return { figures, modelVersion: answer.version };
  });
}
