// One request log line (by the access log's one writer) and count per gRPC call, written once, when
// the call ends for its client: when the first status is handed to grpc-js, or when the client
// leaves before one is. The status recorded is the one the client experienced (client-status.ts).
// It is an interceptor because only an interceptor sees every call: also those grpc-js ends by
// itself before our handler has their request (a message over grpc.max_receive_message_length:
// RESOURCE_EXHAUSTED, as HTTP's 413; a deadline gone before the message came; a message it cannot
// parse), whose trailers it gives the request id and our error code. The handler (server.ts) finds
// the call's record by its request metadata and notes there what it learns (model, version,
// images, bytes).
import * as grpc from '@grpc/grpc-js';
import { errorTable, requestIdFrom } from '../../errors';
import { writeAccessLine } from '../../ops/access-log';
import { metrics } from '../../ops/metrics';
import { clientStatus } from './client-status';
import { DEADLINE_EXCEEDED_CODE, statusName } from './status';

/** What the handler learns of a call, for its line. */
export interface CallNotes {
  model?: string;
  modelVersion?: string;
  images?: number;
  /** Bytes of the request's images; null while (or because) its message was not read. */
  bytesIn: number | null;
}

export interface CallRecord {
  requestId: string;
  notes: CallNotes;
  /** The descriptor of the call's connection, for its unread bytes (server.ts); null where grpc-js does not show it. */
  socketFd: number | null;
}

/** Our error code for a status grpc-js sends by itself. */
const ERROR_CODE: Partial<Record<grpc.status, string>> = {
  [grpc.status.RESOURCE_EXHAUSTED]: errorTable.payload_too_large.code,
  [grpc.status.DEADLINE_EXCEEDED]: DEADLINE_EXCEEDED_CODE,
};

/** Keyed by the request metadata, the one object both the interceptor and the handler are handed. */
const records = new WeakMap<grpc.Metadata, CallRecord>();

export function callRecord(metadata: grpc.Metadata): CallRecord {
  const record = records.get(metadata);
  if (!record) throw new Error('a gRPC call without a record: the callLog interceptor is not installed');
  return record;
}

/**
 * The descriptor under the call's HTTP/2 stream. grpc-js does not publish it: it is read from the call
 * grpc-js hands the first interceptor (its stream's session's socket), and is null if that changes.
 */
function socketFdOf(call: grpc.ServerInterceptingCallInterface): number | null {
  try {
    const fd: unknown = (call as { stream?: { session?: { socket?: { _handle?: { fd?: unknown } } } } }).stream?.session?.socket?._handle?.fd;
    return typeof fd === 'number' && fd >= 0 ? fd : null;
  } catch {
    return null; // node:http2's socket proxy throws once the session has let go of its socket
  }
}

export const callLog: grpc.ServerInterceptor = (descriptor, call) => {
  const startedAt = performance.now();
  const client = call.getPeer(); // now: once the stream is gone grpc-js names no peer
  const record: CallRecord = { requestId: '', notes: { bytesIn: null }, socketFd: socketFdOf(call) };
  let message = false;
  let abandoned = false;
  let ended = false;
  const end = (sent: grpc.status | null) => {
    if (ended) return;
    ended = true;
    record.requestId ||= requestIdFrom(undefined);
    const method = descriptor.path.slice(descriptor.path.lastIndexOf('/') + 1);
    const code = statusName(clientStatus(call, sent, abandoned));
    const { model, modelVersion, images, bytesIn } = record.notes;
    const seconds = (performance.now() - startedAt) / 1000;
    metrics.grpcCalls.inc({ method, model: model ?? '', code });
    metrics.grpcCallDuration.observe({ method }, seconds);
    writeAccessLine({
      requestId: record.requestId,
      interface: 'grpc',
      method,
      client,
      model,
      modelVersion,
      status: code,
      seconds,
      bytesIn,
      extra: images !== undefined ? { images } : {},
    });
  };
  const send = call.sendStatus.bind(call);
  call.sendStatus = (status) => {
    end(status.code);
    const metadata = status.metadata ?? new grpc.Metadata();
    if (metadata.get('x-request-id').length === 0) {
      // grpc-js's own status: the handler's all carry the id
      metadata.set('x-request-id', record.requestId);
      const code = ERROR_CODE[status.code];
      if (code !== undefined) metadata.set('error-code', code);
    }
    send({ ...status, metadata });
  };
  const listener = new grpc.ServerListenerBuilder()
    .withOnReceiveMetadata((metadata, next) => {
      const header = metadata.get('x-request-id')[0];
      record.requestId = requestIdFrom(typeof header === 'string' ? header : undefined);
      records.set(metadata, record);
      next(metadata);
    })
    .withOnReceiveMessage((received, next) => {
      message = true;
      next(received);
    })
    .withOnReceiveHalfClose((next) => {
      abandoned = !message; // the request ended without a whole message: the client gave up on it
      next();
    })
    .withOnCancel(() => end(null)) // the last event of every call: with no status yet, the client left first
    .build();
  return new grpc.ServerInterceptingCall(call, new grpc.ResponderBuilder().withStart((next) => next(listener)).build());
};
