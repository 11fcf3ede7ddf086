// Live streams (GET /v2/stream, a WebSocket; docs/api-v2.md "Live stream"), served by uWebSockets.js
// on a private unix socket in a folder only this user may enter. The HTTP front hands each upgrade
// request over to it, bytes both ways (front/upgrade-relay.ts), with the client's address in
// STREAM_PEER_FIELD; nothing else can reach it. A stream's first message is a settings message with
// its API key; then frames (binary messages) are analysed newest first (newest-frame.ts) through the
// same version pick and batcher as /v2/predict, each answered with a result or an error message.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiError, requestIdFrom, toApiError } from '../errors';
import { errorResponse } from '../http/error-answers';
import { uws, type ListenSocket, type WebSocket } from '../http/uws';
import { log } from '../log';
import { metrics } from '../ops/metrics';
import { analyzePicked, pickVersion } from '../packs/routed';
import { AbortedError, DeadlineError, QueueFullError } from '../pipeline/batcher';
import type { Service } from '../service';
import { RequestTiming } from '../timing/stage-times';
import { explain } from '../v2/explain';
import { predictedFigures } from '../v2/predict';
import { predictResponse } from '../v2/predict-response';
import { STREAM_PATH, STREAM_PEER_FIELD } from '../front/upgrade-relay';
import { CLOSE } from './close-codes';
import { errorMessage, readSettings, resultMessage, type StreamSettings } from './messages';
import { NewestFrame, type FrameOutcome } from './newest-frame';

/** How long a new stream may take to send its settings message with the key. */
const AUTH_WAIT_MS = 10_000;

export interface StreamServerOptions {
  /** The largest frame (CATCOMFORT_MAX_BODY_BYTES); past it the WebSocket server closes with 1009. */
  maxFrameBytes: number;
  maxConnections: number;
  idleTimeoutS: number;
  maxBufferedBytes: number;
  /** Longest an analysis of a frame may wait in a queue (CATCOMFORT_REQUEST_TIMEOUT_MS); past it, skipped. */
  requestTimeoutMs: number;
  defaultModel: string;
}

interface Stream {
  id: string;
  peer: string;
  startedAt: number;
  keyed: boolean;
  settings: StreamSettings;
  frames: NewestFrame | null;
  leaving: AbortController;
  authTimer: NodeJS.Timeout | null;
  bytesIn: number;
  bytesOut: number;
  closeCode: number | null;
}

type StreamSocket = WebSocket<Stream>;

export class StreamServer {
  private listening: ListenSocket | null = null;
  private readonly open = new Set<StreamSocket>();
  private service: Service | null = null;
  private isOpen: () => boolean = () => false;
  private closing = false;

  private constructor(
    private readonly options: StreamServerOptions,
    private readonly folder: string,
    /** The unix socket the front hands upgrade requests to. */
    readonly socketPath: string,
  ) {}

  /** Listens on a new private unix socket. */
  static async start(options: StreamServerOptions): Promise<StreamServer> {
    const folder = mkdtempSync(path.join(os.tmpdir(), 'catcomfort-stream-'));
    const server = new StreamServer(options, folder, path.join(folder, 'stream.sock'));
    await server.listen();
    return server;
  }

  /** From now on streams are served by `service` while `isOpen()` (ready, not draining); before, upgrades get 503. */
  serveWith(service: Service, isOpen: () => boolean): void {
    this.service = service;
    this.isOpen = isOpen;
  }

  /** Streams open now. */
  get streams(): number {
    return this.open.size;
  }

  /** Stops listening and closes every stream with 1001. */
  close(): void {
    this.closing = true;
    if (this.listening) uws.us_listen_socket_close(this.listening);
    this.listening = null;
    for (const ws of [...this.open]) ws.end(CLOSE.goingAway.code, CLOSE.goingAway.reason);
    rmSync(this.folder, { recursive: true, force: true });
  }

  private listen(): Promise<void> {
    const app = uws.App();
    app.ws<Stream>(STREAM_PATH, {
      maxPayloadLength: this.options.maxFrameBytes,
      idleTimeout: this.options.idleTimeoutS,
      maxBackpressure: this.options.maxBufferedBytes * 2,
      sendPingsAutomatically: false,
      upgrade: (res, req, context) => {
        const requestId = requestIdFrom(req.getHeader('x-request-id') || undefined);
        const refusal = this.refusal();
        if (refusal) {
          const answer = errorResponse(requestId, refusal);
          res.cork(() => {
            res.writeStatus('503 Service Unavailable');
            for (const [name, value] of Object.entries(answer.headers)) res.writeHeader(name, value);
            // The connection ends with the answer: the relay rewrote only its first head (the peer field).
            res.end(answer.body, true);
          });
          return;
        }
        const stream: Stream = {
          id: requestId,
          peer: req.getHeader(STREAM_PEER_FIELD),
          startedAt: performance.now(),
          keyed: false,
          settings: { model: this.options.defaultModel, packVersion: undefined, threshold: null, explain: false },
          frames: null,
          leaving: new AbortController(),
          authTimer: null,
          bytesIn: 0,
          bytesOut: 0,
          closeCode: null,
        };
        res.upgrade(stream, req.getHeader('sec-websocket-key'), '', req.getHeader('sec-websocket-extensions'), context);
      },
      open: (ws) => {
        this.open.add(ws);
        metrics.streamsOpen.set(this.open.size);
        const stream = ws.getUserData();
        stream.authTimer = setTimeout(() => this.end(ws, CLOSE.unauthorized), AUTH_WAIT_MS);
      },
      message: (ws, message, isBinary) => {
        const stream = ws.getUserData();
        stream.bytesIn += message.byteLength;
        if (isBinary) this.frame(ws, stream, message);
        else this.settingsMessage(ws, stream, Buffer.from(message).toString('utf8'));
      },
      close: (ws, code) => {
        this.open.delete(ws);
        metrics.streamsOpen.set(this.open.size);
        const stream = ws.getUserData();
        stream.closeCode ??= code;
        this.ended(stream);
      },
    });
    app.any('/*', (res) => void res.writeStatus('404 Not Found').end('', true));
    return new Promise((resolve, reject) => {
      app.listen_unix((socket) => {
        if (!socket) return reject(new Error(`the stream server could not listen on ${this.socketPath}`));
        this.listening = socket;
        resolve();
      }, this.socketPath);
    });
  }

  /** Why a new stream is refused now (503), or null. */
  private refusal(): ApiError | null {
    if (this.closing || !this.service || !this.isOpen()) return new ApiError('unavailable', 'The service is starting or shutting down.', {}, { 'Retry-After': '5' });
    if (this.open.size >= this.options.maxConnections) {
      return new ApiError('overloaded', `Live streams are limited to ${this.options.maxConnections} at once.`, {}, { 'Retry-After': '1' });
    }
    return null;
  }

  private settingsMessage(ws: StreamSocket, stream: Stream, text: string): void {
    let read: ReturnType<typeof readSettings>;
    try {
      read = readSettings(text, stream.settings);
    } catch (error) {
      if (!stream.keyed) return this.end(ws, CLOSE.unauthorized);
      return this.send(ws, stream, errorMessage(stream.id, null, null, toApiError(error) ?? new ApiError('internal_error')));
    }
    if (!stream.keyed) {
      if (!this.service!.keys.check(read.apiKey)) return this.end(ws, CLOSE.unauthorized);
      this.keyed(ws, stream);
    }
    const model = this.service!.registry.get(read.settings.model);
    if (!model) {
      const error = new ApiError('model_not_found', `Model "${read.settings.model}" is not loaded; the stream's settings are unchanged.`);
      return this.send(ws, stream, errorMessage(stream.id, null, null, error));
    }
    stream.settings = read.settings;
    const { packVersion, threshold, explain } = read.settings;
    const answer = { type: 'settings', model: model.id, pack_version: packVersion ?? null, threshold, explain, classifier_trained: !model.manifest.classifier.reference };
    this.send(ws, stream, JSON.stringify(answer));
  }

  /** The stream's key passed: frames are taken from now on. */
  private keyed(ws: StreamSocket, stream: Stream): void {
    stream.keyed = true;
    clearTimeout(stream.authTimer!);
    stream.frames = new NewestFrame(
      (bytes, seq, waitedMs) => this.analyse(stream, bytes, seq, waitedMs),
      (answer) => this.send(ws, stream, answer),
    );
  }

  private frame(ws: StreamSocket, stream: Stream, message: ArrayBuffer): void {
    if (!stream.frames) return this.end(ws, CLOSE.unauthorized);
    metrics.streamFrames.inc({ outcome: 'received' });
    const skipped = stream.frames.skipped;
    // The message's memory is the WebSocket server's only during this call: the frame is copied.
    stream.frames.frame(Buffer.from(new Uint8Array(message)));
    if (stream.frames.skipped > skipped) metrics.streamFrames.inc({ outcome: 'skipped' }); // the frame it replaced
  }

  /** One frame through the version pick and the batcher, as /v2/predict's image; a full queue or a deadline skips it. */
  private async analyse(stream: Stream, bytes: Buffer, seq: number, waitedMs: number): Promise<FrameOutcome> {
    const service = this.service!;
    const { model: modelId, packVersion, threshold } = stream.settings;
    const wantsExplanation = stream.settings.explain;
    const requestId = requestIdFrom(undefined);
    const timing = new RequestTiming();
    const startedAt = performance.now();
    try {
      const pick = pickVersion(service.registry, modelId, packVersion, true);
      const item = { data: bytes, encoding: 'bytes' as const, ...(wantsExplanation ? { explain: true } : {}) };
      const options = { deadline: startedAt + this.options.requestTimeoutMs, signal: stream.leaving.signal, timing };
      const { model, analysis } = await analyzePicked(pick, item, options, threshold);
      const answer = predictResponse({ serviceVersion: service.version }, predictedFigures(model, analysis, threshold), requestId);
      const body = wantsExplanation ? { ...answer, explanation: explain(model, analysis) } : answer;
      const timings = timing.stages(startedAt, performance.now());
      metrics.streamFrames.inc({ outcome: 'analysed' });
      return (skipped) => resultMessage(seq, skipped, waitedMs, body, timings);
    } catch (error) {
      if (error instanceof QueueFullError || error instanceof DeadlineError || error instanceof AbortedError) {
        metrics.streamFrames.inc({ outcome: 'skipped' });
        return null;
      }
      metrics.streamFrames.inc({ outcome: 'analysed' });
      const apiError = toApiError(error, { request_id: requestId, path: STREAM_PATH }) ?? new ApiError('internal_error');
      return (skipped) => errorMessage(requestId, seq, skipped, apiError);
    }
  }

  /** Sends `text`, unless the client has left more than the limit of answers unread: then the stream closes with 4008. */
  private send(ws: StreamSocket, stream: Stream, text: string): void {
    if (ws.getBufferedAmount() > this.options.maxBufferedBytes) return this.end(ws, CLOSE.slowReader);
    stream.bytesOut += Buffer.byteLength(text);
    if (ws.send(text, false) === 2) this.end(ws, CLOSE.slowReader);
  }

  private end(ws: StreamSocket, close: { code: number; reason: string }): void {
    const stream = ws.getUserData();
    if (stream.closeCode !== null) return;
    stream.closeCode = close.code;
    ws.end(close.code, close.reason);
  }

  /** The stream has closed: its analysis is abandoned, its waiting frame skipped, its access line written. */
  private ended(stream: Stream): void {
    if (stream.authTimer) clearTimeout(stream.authTimer);
    stream.leaving.abort();
    const frames = stream.frames;
    if (!frames) return this.line(stream, null);
    const skipped = frames.skipped;
    frames.close();
    if (frames.skipped > skipped) metrics.streamFrames.inc({ outcome: 'skipped' }, frames.skipped - skipped);
    void frames.settled().then(() => this.line(stream, frames));
  }

  /** The stream's access line, once its last analysis has ended. */
  private line(stream: Stream, frames: NewestFrame | null): void {
    log.info('stream', {
      request_id: stream.id,
      client: stream.peer,
      model: stream.settings.model,
      seconds: Math.round(performance.now() - stream.startedAt) / 1000,
      frames_received: frames?.received ?? 0,
      frames_analysed: frames?.analysed ?? 0,
      frames_skipped: frames?.skipped ?? 0,
      bytes_in: stream.bytesIn,
      bytes_out: stream.bytesOut,
      close_code: stream.closeCode,
    });
  }
}
