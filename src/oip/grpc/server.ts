// The Open Inference Protocol's gRPC service (proto/inference.proto) on its own port
// (CATCOMFORT_GRPC_PORT): the same keys (`api-key` metadata), body limit, deadlines, error table,
// request log and drain as HTTP. ServerLive and ServerReady need no key; every other call does,
// and before readiness or once the port closes after the drain delay gets UNAVAILABLE. Each call's log line is written by the
// callLog interceptor (call-log.ts); the handlers note what they learn on the call's record.
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ApiError, toApiError } from '../../errors';
import type { Readiness } from '../../ops/readiness';
import { DeadlineError } from '../../pipeline/batcher';
import { log } from '../../log';
import type { Service, ServiceInterface } from '../../service';
import { infer } from '../infer';
import { modelMetadata, modelReady, serverMetadata } from '../metadata';
import { callLog, callRecord, type CallNotes } from './call-log';
import { toInferCall, toInferResponse, type ModelInferRequest } from './messages';
import { freeMessageWhenRead } from '../../native/own-memory';
import { afterPendingInput } from './pending-input';
import { DEADLINE_EXCEEDED_CODE, grpcStatus } from './status';

/** The protocol's definition, shipped beside dist/ (and in the offline bundle). */
export const PROTO_FILE = path.join(__dirname, '../../../../proto/inference.proto');

/** How long a closing server waits for the calls in flight before it cancels what is left. */
const CLOSE_WAIT_MS = 10_000;

interface RunningGrpc {
  port: number;
  /** Refuses new calls, waits for those in flight up to timeoutMs, then cancels what is left. */
  close(timeoutMs: number): Promise<void>;
}

type Unary = grpc.handleUnaryCall<any, any>;

/** A ModelInfer message's bytes besides its raw_input_contents (names, shapes, parameters) at most, for its memory to be freed when read. */
const MESSAGE_OTHER_BYTES = 64 * 1024;

interface CallContext {
  requestId: string;
  signal: AbortSignal;
  /** performance.now() ms: the client's deadline or the request timeout, whichever is sooner. */
  deadline: number;
  /** The client set a deadline sooner than the request timeout. */
  clientDeadline: boolean;
  notes: CallNotes;
}

/** The gRPC interface on its own port (none where `port` is null: CATCOMFORT_GRPC_PORT unset). */
export function grpcInterface(service: Service, options: { host: string; port: number | null }): ServiceInterface {
  let running: RunningGrpc | null = null;
  return {
    async start({ readiness }) {
      if (options.port === null) return;
      running = await startGrpc(service, readiness, { host: options.host, port: options.port });
      log.info('grpc listening', { host: options.host, port: running.port });
    },
    close: async () => running?.close(CLOSE_WAIT_MS),
  };
}

async function startGrpc(service: Service, readiness: Readiness, options: { host: string; port: number }): Promise<RunningGrpc> {
  const definition = protoLoader.loadSync(PROTO_FILE, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
  const proto = grpc.loadPackageDefinition(definition) as any;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': service.config.maxBodyBytes,
    'grpc.max_send_message_length': -1,
    interceptors: [callLog],
  });

  const handler = (open: boolean, work: (request: any, ctx: CallContext) => Promise<unknown> | unknown): Unary => {
    return (call, callback) => {
      const startedAt = performance.now();
      const { requestId, notes, socketFd } = callRecord(call.metadata);
      notes.bytesIn = messageBytes(call.request);
      const controller = new AbortController();
      call.on('cancelled', () => controller.abort());
      const clientMs = deadlineMs(call.getDeadline());
      const timeoutMs = service.config.requestTimeoutMs;
      const ctx: CallContext = {
        requestId,
        signal: controller.signal,
        deadline: startedAt + Math.min(clientMs, timeoutMs),
        clientDeadline: clientMs < timeoutMs,
        notes,
      };
      const trailer = new grpc.Metadata();
      trailer.set('x-request-id', requestId);
      // Once the call has ended (the client left, or grpc-js sent DEADLINE_EXCEEDED), nothing is written.
      const answer = (write: () => void) => {
        if (controller.signal.aborted) return;
        afterPendingInput(socketFd, () => {
          if (!controller.signal.aborted) write();
        });
      };
      Promise.resolve()
        .then(() => {
          if (!open && !service.keys.check(metadataValue(call.metadata, 'api-key'))) throw new ApiError('unauthorized');
          if (!open && !readiness.serving) throw new ApiError('unavailable');
          return work(call.request, ctx);
        })
        .then(
          (response) => answer(() => callback(null, response, trailer)),
          (error: unknown) =>
            answer(() => {
              const failure = grpcFailure(error, ctx, requestId);
              for (const [key, value] of Object.entries(failure.metadata)) trailer.set(key, value);
              callback({ code: failure.code, details: failure.details, metadata: trailer });
            }),
        );
    };
  };

  server.addService(proto.inference.GRPCInferenceService.service, {
    ServerLive: handler(true, () => ({ live: true })),
    ServerReady: handler(true, () => ({ ready: readiness.ready })),
    ServerMetadata: handler(false, () => serverMetadata(service.version)),
    ModelReady: handler(false, (request: { name: string; version: string }, ctx) => {
      ctx.notes.model = request.name;
      return { ready: modelReady(service.registry, readiness.ready, request.name, request.version) };
    }),
    ModelMetadata: handler(false, (request: { name: string; version: string }, ctx) => {
      ctx.notes.model = request.name;
      return modelMetadata(service.registry, request.name, request.version);
    }),
    ModelInfer: handler(false, async (request: ModelInferRequest, ctx) => {
      ctx.notes.model = request.model_name;
      // The message's memory is freed once this call and its analyses are done with it.
      const message = freeMessageWhenRead(request.raw_input_contents ?? [], MESSAGE_OTHER_BYTES);
      try {
        const call = toInferCall(request);
        ctx.notes.images = call.inputs[0]?.items?.length;
        const answer = await infer(service.registry, call, { deadline: ctx.deadline, signal: ctx.signal });
        ctx.notes.modelVersion = answer.version;
        return toInferResponse(answer);
      } finally {
        message?.letGo();
      }
    }),
  } satisfies Record<string, Unary>);

  const address = `${options.host.includes(':') ? `[${options.host}]` : options.host}:${options.port}`;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    port,
    close: (timeoutMs) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, timeoutMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

function metadataValue(metadata: grpc.Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  return typeof value === 'string' ? value : undefined;
}

/** Milliseconds left before a call's deadline (Infinity without one). */
function deadlineMs(deadline: grpc.Deadline): number {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : Infinity;
}

/** Bytes of a request's images, for the log line (0 for other calls). */
function messageBytes(request: unknown): number {
  const r = request as Partial<ModelInferRequest> | undefined;
  const raw = (r?.raw_input_contents ?? []).reduce((n, b) => n + b.length, 0);
  const listed = (r?.inputs ?? []).reduce((n, t) => n + (t.contents?.bytes_contents ?? []).reduce((m, b) => m + b.length, 0), 0);
  return raw + listed;
}

/** Our coded error as a gRPC status: the message as details; our code, details and Retry-After as trailers. */
function grpcFailure(error: unknown, ctx: CallContext, requestId: string): { code: grpc.status; details: string; metadata: Record<string, string> } {
  if (error instanceof DeadlineError && ctx.clientDeadline) {
    return { code: grpc.status.DEADLINE_EXCEEDED, details: 'The request could not be processed before its deadline.', metadata: { 'error-code': DEADLINE_EXCEEDED_CODE } };
  }
  const apiError = toApiError(error, { request_id: requestId, interface: 'grpc' }) ?? new ApiError('internal_error');
  const metadata: Record<string, string> = { 'error-code': apiError.code };
  if (Object.keys(apiError.details).length > 0) metadata['error-details'] = JSON.stringify(apiError.details);
  const retryAfter = apiError.headers['Retry-After'];
  if (retryAfter) metadata['retry-after'] = retryAfter;
  return { code: grpcStatus(apiError), details: apiError.message, metadata };
}
