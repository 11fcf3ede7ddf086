// Calls that grpc-js ends by itself before our handler has their request: a message over
// grpc.max_receive_message_length (RESOURCE_EXHAUSTED, as HTTP's 413), a deadline gone before the
// message came, a message it cannot parse. Each gets the request id and our error code in its
// trailers, a request log line and a count, like every other call. grpc-js sends these statuses on
// the innermost call, which only an interceptor is handed; its sendStatus is wrapped there.
import * as grpc from '@grpc/grpc-js';
import { errorTable } from '../../http/errors';
import { requestIdFrom } from '../../http/request-id';
import { recordGrpcCall } from '../../ops/access-log';
import { DEADLINE_EXCEEDED_CODE, statusName } from './status';

/** Our error code for a status grpc-js sends by itself. */
const ERROR_CODE: Partial<Record<grpc.status, string>> = {
  [grpc.status.RESOURCE_EXHAUSTED]: errorTable.payload_too_large.code,
  [grpc.status.DEADLINE_EXCEEDED]: DEADLINE_EXCEEDED_CODE,
};

export const libraryRefusals: grpc.ServerInterceptor = (descriptor, call) => {
  const startedAt = performance.now();
  let received = false;
  let requestId: string | null = null;
  const send = call.sendStatus.bind(call);
  call.sendStatus = (status) => {
    if (!received) {
      const id = (requestId ??= requestIdFrom(undefined));
      const metadata = status.metadata ?? new grpc.Metadata();
      metadata.set('x-request-id', id);
      const code = ERROR_CODE[status.code];
      if (code !== undefined) metadata.set('error-code', code);
      recordGrpcCall({
        requestId: id,
        method: descriptor.path.slice(descriptor.path.lastIndexOf('/') + 1),
        client: call.getPeer(),
        model: undefined,
        modelVersion: undefined,
        code: statusName(status.code),
        startedAt,
        bytesIn: null,
        images: undefined,
      });
      status = { ...status, metadata };
    }
    send(status);
  };
  const listener = new grpc.ServerListenerBuilder()
    .withOnReceiveMetadata((metadata, next) => {
      const header = metadata.get('x-request-id')[0];
      requestId = requestIdFrom(typeof header === 'string' ? header : undefined);
      next(metadata);
    })
    .withOnReceiveMessage((message, next) => {
      received = true; // from here on the handler answers, logs and counts
      next(message);
    })
    .build();
  return new grpc.ServerInterceptingCall(call, new grpc.ResponderBuilder().withStart((next) => next(listener)).build());
};
