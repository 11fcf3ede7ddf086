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
import { requestIdFrom } from '../errors';
import { predictResponse, type PredictFigures } from './predict-response';
import { validatePredictRequest } from './validate';

/** A pack id that reads the same undecoded (the router decodes path parameters). */
const PLAIN_ID = /^[A-Za-z0-9._~-]+$/;
const PINNED = /^\/v2\/models\/([^/?]+)\/predict$/;

/** The route and the pack a predict path names; null: no predict route, or one the usual way must read. */
function predictRoute(target: string, defaultModel: string): { route: string; model: string } | null {
  if (target === '/v2/predict') return { route: '/v2/predict', model: defaultModel };
  const pinned = PINNED.exec(target);
  return pinned && PLAIN_ID.test(pinned[1]!) ? { route: '/v2/models/:model_id/predict', model: pinned[1]! } : null;
}

/** The front's ends of the predict routes. */
export function hotRoutes(data: HotRoutesData): HotRoutes {
  const ctx = { serviceVersion: data.serviceVersion };
  return {
    prelude(method, target, fields, peer, body, image): HotRequest | null {
      const found = method === 'POST' && image !== null ? predictRoute(target, data.defaultModel) : null;
      if (!found) return null;
      // As the service's header map holds them: the last of a repeated field.
      let contentType: string | undefined;
      let apiKey: string | undefined;
      let requestId: string | undefined;
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const name = fields[i];
        if (name === 'content-type') contentType = fields[i + 1];
        else if (name === 'api-key') apiKey = fields[i + 1];
        else if (name === 'x-request-id') requestId = fields[i + 1];
      }
      if (!isJsonContentType(contentType)) return null;
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
      return { ...found, path: target, requestId: requestIdFrom(requestId), apiKey, peer, threshold, imageStart: image![0] + 1, imageEnd: image![1] - 1 };
    },
    answer(result) {
      const body = JSON.stringify(predictResponse(ctx, result.figures as PredictFigures, result.requestId));
      return { status: '200 OK', fields: `Content-Type: application/json\r\nX-Request-ID: ${result.requestId}\r\nServer-Timing: ${result.serverTiming}\r\n`, body };
    },
  };
}
