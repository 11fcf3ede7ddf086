// Hot routes: requests whose prelude (checks, body split and validation) and answer (JSON, fields)
// run in the front that holds the client's connection, so the service's thread only picks the
// version, batches and analyses (docs/architecture.md "Hot routes"). What crosses between the two
// is plain data, defined here: the route's request as the front read it (HotRequest) and what the
// service found (HotResult). Anything a hot route's prelude does not accept takes the usual way, and
// so does a hot request the service will not take (not ready, the key or the pack refused): the
// usual way answers those, byte for byte as before.
import type { RequestTiming } from '../timing/stage-times';
import type { ErrorRenderer } from './error-answers';
import type { AccessLineFields, Leaving } from './exchange';

/** A hot route's request read and validated by the front (v2/hot-predict.ts). */
export interface HotRequest {
  /** The route's pattern, as the router names it. */
  route: string;
  path: string;
  /** The request id the answer carries (the client's X-Request-ID, else a new one). */
  requestId: string;
  /** The client's api-key field. */
  apiKey: string | undefined;
  /** The client's address, as the front judged it. */
  peer: string;
  model: string;
  /** The route's own reading of the body (plain data, offsets into the body where it holds images). */
  args: unknown;
}

/** What the service found for a hot request, for the front to answer with. */
export interface HotResult {
  requestId: string;
  /** The Server-Timing field's value. */
  serverTiming: string;
  /** The route's own figures (v2/predict-response.ts PredictFigures). */
  figures: unknown;
  /** The access line without its `bytes_out`, which the front sets once the body is written; null: no line. */
  line: AccessLineFields | null;
}

/** Hot routes' two ends in the front (v2/hot-predict.ts). */
export interface HotRoutes {
  /**
   * For a POST whose whole body has come, the request the service needs to serve it without its
   * head; null: the usual way. `image`: where v2's image member lies in the body (json-image.ts), if found.
   */
  prelude(method: string, target: string, fields: readonly string[], peer: string, body: Buffer, image: [number, number] | null): HotRequest | null;
  /** The answer's status, fields (lines ending CRLF) and body. */
  answer(result: HotResult): { status: string; fields: string; body: string | Buffer };
}

/** What a hot route's analysis tells the access log, with the figures its answer is made of. */
export interface HotFindings {
  figures: unknown;
  modelVersion: string;
  detection?: string;
}

/** Hot routes' end in the service (v2/hot-service.ts). */
export interface HotService {
  /** The route patterns it serves. */
  routes: readonly string[];
  /** How its routes' errors are written (the usual routes' renderer). */
  render: ErrorRenderer;
  /** Whether the service takes `request` now (its key passes, its pack is loaded); false: the usual way answers it. */
  takes(request: HotRequest): boolean;
  /** Serves the request from its args and `body`; rejects as the usual route's handler would. */
  serve(request: HotRequest, body: Buffer, options: { signal: Leaving; timing: RequestTiming }): Promise<HotFindings>;
}

/** What a front builds its hot routes from (plain data: it crosses to the front's threads). */
export interface HotRoutesData {
  serviceVersion: string;
  /** The pack `POST /v2/predict` uses (CATCOMFORT_DEFAULT_MODEL). */
  defaultModel: string;
}
