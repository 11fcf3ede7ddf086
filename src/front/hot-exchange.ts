// One hot request in the service (http/hot-route.ts), served without an Exchange: what the access log
// and the metrics read of it once it has ended (EndedRequest), and its client's leaving, heard by the
// batcher as an AbortSignal is (Leaving). Its access line always goes to the front with the answer;
// after the client has left, the service writes it.
import type { AccessLineFields, EndedRequest, Leaving } from '../http/exchange';
import type { HotRequest } from '../http/hot-route';
import { RequestTiming } from '../timing/stage-times';

export class HotExchange implements EndedRequest, Leaving {
  readonly method = 'POST';
  readonly path: string;
  readonly route: string;
  readonly peerAddress: string;
  readonly answeredRequestId: string;
  readonly notes: { model?: string; modelVersion?: string; detection?: string };
  readonly timing = new RequestTiming();
  stages: ReturnType<RequestTiming['stages']> | null = null;
  status: number | null = null;
  bytesOut = 0;
  aborted = false;
  /** The access line, carried to the front with the answer. */
  line: AccessLineFields | null = null;
  private listeners: Array<() => void> = [];

  constructor(
    request: HotRequest,
    readonly startedAt: number,
    readonly bytesIn: number,
  ) {
    this.path = request.path;
    this.route = request.route;
    this.peerAddress = request.peer;
    this.answeredRequestId = request.requestId;
    this.notes = { model: request.model };
  }

  /** The request id is the answer's (answeredRequestId); no other field is read. */
  header(): string | undefined {
    return undefined;
  }

  carryLine(fields: AccessLineFields): boolean {
    if (this.aborted) return false;
    this.line = fields;
    return true;
  }

  /** The client left: the analysis hears it. */
  abort(): void {
    this.aborted = true;
    for (const listener of this.listeners.splice(0)) listener();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.listeners.indexOf(listener);
    if (index >= 0) this.listeners.splice(index, 1);
  }
}
