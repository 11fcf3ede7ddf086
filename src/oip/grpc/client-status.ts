// The status a gRPC call's client experienced, which is not always the one the service sent. A
// client that gives up resets the call's HTTP/2 stream, often after ending its request in the middle
// of the message, and reports CANCELLED, or DEADLINE_EXCEEDED when its deadline passed, whatever
// reaches it afterwards: grpc-js's own UNIMPLEMENTED "Received no request message" for the ended
// request, or our answer to a request already analysed. The reset says nothing of why, so it is taken
// as the deadline's when it comes near the deadline as grpc-js reckoned it: from the call's
// grpc-timeout, counted from when the call was read, so later than the client's by the header's
// trip (measured here: resets for a 1 ms deadline came up to 2 ms before it).
import * as grpc from '@grpc/grpc-js';

/** How long before the server's reckoning of the deadline a reset still counts as the deadline's. */
export const RESET_NEAR_DEADLINE_MS = 20;

/**
 * `sent`: the first status handed to grpc-js, null when the client left before any was;
 * `abandoned`: the request ended without a whole message (the client's reset follows).
 */
export function clientStatus(call: grpc.ServerInterceptingCallInterface, sent: grpc.status | null, abandoned: boolean): grpc.status {
  const late = msPast(call.getDeadline());
  if (sent === null || abandoned) return late > -RESET_NEAR_DEADLINE_MS ? grpc.status.DEADLINE_EXCEEDED : grpc.status.CANCELLED;
  return late >= 0 ? grpc.status.DEADLINE_EXCEEDED : sent;
}

/** Milliseconds since the deadline (negative before it; -Infinity without one). */
function msPast(deadline: grpc.Deadline): number {
  return Date.now() - (deadline instanceof Date ? deadline.getTime() : deadline);
}
