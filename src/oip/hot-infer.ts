// The Open Inference Protocol's REST infer as a hot route (http/hot-route.ts), its front's end: the
// front splits and checks the request as the usual route does (infer-request.ts), the images staying
// in the body as offsets, and writes the answer (answer-json.ts); the service takes it when the key
// passes and the pack is loaded, and only picks the version and analyses (hot-service.ts). A request
// the usual route would refuse, or with a path parameter that needs decoding, takes the usual way
// (rest.ts). Light on purpose: it is loaded on every front thread.
import { isJsonContentType } from '../http/content-type';
import type { HotRequest, HotRoutes } from '../http/hot-route';
import { parseJsonObject } from '../http/json-body';
import { lastField } from '../http/request-head';
import { requestIdFrom } from '../errors';
import type { AnalyzeItem } from '../native/addon';
import { inferRestAnswer } from './answer-json';
import type { InferAnswer, InferCall, InferInput } from './infer';
import { HEADER_LENGTH, parseInferRequest, splitBody } from './infer-request';

/** The infer routes' patterns, as the router names them. */
export const INFER_ROUTES = ['/v2/models/:model_id/infer', '/v2/models/:model_id/versions/:version/infer'] as const;
const PATH = /^\/v2\/models\/([A-Za-z0-9._~-]+)(?:\/versions\/([A-Za-z0-9._~-]+))?\/infer$/;

/** An image as it crosses to the service: where its bytes lie in the body, or its base64 text from the JSON. */
type CrossingItem = { start: number; end: number; encoding: AnalyzeItem['encoding'] } | AnalyzeItem & { data: string };

/** What the service needs of an infer request: its call, the images as offsets into the body, and the outputs asked as binary. */
export interface InferArgs {
  call: Omit<InferCall, 'inputs'> & { inputs: Array<Omit<InferInput, 'items'> & { items: CrossingItem[] | null }> };
  binaryOutputs: string[] | 'all';
}

/** What the front answers with: the service's answer and the outputs asked as binary. */
export interface InferFigures {
  answer: InferAnswer;
  binaryOutputs: string[] | 'all';
}

/** The call with its images as views of `body` again. */
export function callOf(args: InferArgs, body: Buffer): InferCall {
  const inputs = args.call.inputs.map((input) => ({
    ...input,
    items: input.items && input.items.map((item): AnalyzeItem => ('start' in item ? { data: body.subarray(item.start, item.end), encoding: item.encoding } : item)),
  }));
  return { ...args.call, inputs };
}

function crossing(item: AnalyzeItem, body: Buffer): CrossingItem {
  if (typeof item.data === 'string') return { data: item.data, encoding: item.encoding };
  const start = item.data.byteOffset - body.byteOffset;
  return { start, end: start + item.data.length, encoding: item.encoding };
}

/** The front's ends of the infer routes. */
export function hotInferRoutes(): HotRoutes {
  return {
    routes: INFER_ROUTES,
    prelude(method, target, fields, peer, body): HotRequest | null {
      const path = method === 'POST' ? PATH.exec(target) : null;
      if (!path) return null;
      const headerLength = lastField(fields, HEADER_LENGTH);
      if (headerLength === undefined && !isJsonContentType(lastField(fields, 'content-type'))) return null;
      const [, model, version] = path as unknown as [string, string, string | undefined];
      let args: InferArgs;
      try {
        const { json, binary } = splitBody(body, headerLength);
        const { call, binaryOutputs } = parseInferRequest(parseJsonObject(json), binary, model, version);
        // Checked by the service (infer.ts); anything but a number stays with the usual way, which says why.
        if (call.threshold !== undefined && call.threshold !== null && typeof call.threshold !== 'number') return null;
        args = { call: { ...call, inputs: call.inputs.map((input) => ({ ...input, items: input.items && input.items.map((item) => crossing(item, body)) })) }, binaryOutputs };
      } catch {
        return null;
      }
      const route = version === undefined ? INFER_ROUTES[0] : INFER_ROUTES[1];
      return { route, path: target, requestId: requestIdFrom(lastField(fields, 'x-request-id')), apiKey: lastField(fields, 'api-key'), peer, model, args };
    },
    answer(result) {
      const { answer, binaryOutputs } = result.figures as InferFigures;
      const { headers, body } = inferRestAnswer(answer, binaryOutputs, result.requestId);
      let fields = '';
      for (const name in headers) fields += `${name}: ${headers[name]}\r\n`;
      return { status: '200 OK', fields: `${fields}Server-Timing: ${result.serverTiming}\r\n`, body };
    },
  };
}
