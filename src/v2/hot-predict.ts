// POST /v2/predict and POST /v2/models/{model_id}/predict as hot routes (http/hot-route.ts), their
// front's end: the front reads the request (fields, body split and validated as the usual route does)
// and writes the answer; the service takes it when the key passes and the pack is loaded, and only
// analyses (hot-service.ts). Light on purpose: it is loaded on every front thread. A
// request with a query (opt-ins), another content type, or a body the usual route would refuse takes
// the usual way (routes.ts), which answers it as always; so do the errors of an analysis, rendered by
// the service as the usual route renders them.
import { isJsonContentType } from '../http/content-type';
import type { HotRequest, HotRoutes, HotRoutesData } from '../http/hot-route';
import { parseJsonObjectWithImage } from '../http/json-body';
import { IMAGE_MEMBER, noteMemberSpan, PLACEHOLDER } from '../http/json-image';
import { lastField } from '../http/request-head';
import { requestIdFrom } from '../errors';
import { predictResponse, type PredictFigures } from './predict-response';
import { validatePredictRequest } from './validate';

/** A pack id that reads the same undecoded (the router decodes path parameters). */
const PLAIN_ID = /^[A-Za-z0-9._~-]+$/;
const PINNED = /^\/v2\/models\/([^/?]+)\/predict$/;
/** The predict routes' patterns, as the router names them. */
export const PREDICT_ROUTES = ['/v2/predict', '/v2/models/:model_id/predict'] as const;

/** What the service needs of a predict's body: the threshold asked for (null: the model's default) and where the image's base64 bytes lie. */
export interface PredictArgs {
  threshold: number | null;
  imageStart: number;
  imageEnd: number;
}

/** The route and the pack a predict path names; null: no predict route, or one the usual way must read. */
function predictRoute(target: string, defaultModel: string): { route: string; model: string } | null {
  if (target === '/v2/predict') return { route: PREDICT_ROUTES[0], model: defaultModel };
  const pinned = PINNED.exec(target);
  return pinned && PLAIN_ID.test(pinned[1]!) ? { route: PREDICT_ROUTES[1], model: pinned[1]! } : null;
}

/** The front's ends of the predict routes. */
export function hotRoutes(data: HotRoutesData): HotRoutes {
  const ctx = { serviceVersion: data.serviceVersion };
  return {
    prelude(method, target, fields, peer, body, image): HotRequest | null {
      const found = method === 'POST' && image !== null ? predictRoute(target, data.defaultModel) : null;
      if (!found) return null;
      if (!isJsonContentType(lastField(fields, 'content-type'))) return null;
      noteMemberSpan(body, IMAGE_MEMBER, image!);
      let threshold: number | null;
      try {
        const members = parseJsonObjectWithImage(body, IMAGE_MEMBER);
        if (!Buffer.isBuffer(members.image)) return null;
        threshold = validatePredictRequest({ ...members, image: PLACEHOLDER }).threshold ?? null;
      } catch {
        return null;
      }
      // The image's base64 bytes: inside the member's quotes.
      const args: PredictArgs = { threshold, imageStart: image![0] + 1, imageEnd: image![1] - 1 };
      return { ...found, path: target, requestId: requestIdFrom(lastField(fields, 'x-request-id')), apiKey: lastField(fields, 'api-key'), peer, args };
    },
    answer(result) {
      const body = JSON.stringify(predictResponse(ctx, result.figures as PredictFigures, result.requestId));
      return { status: '200 OK', fields: `Content-Type: application/json\r\nX-Request-ID: ${result.requestId}\r\nServer-Timing: ${result.serverTiming}\r\n`, body };
    },
  };
}
