// Our coded errors as gRPC status codes: the neutral status of the error table (src/errors/table.ts)
// maps one to one onto gRPC's canonical codes.
import { status } from '@grpc/grpc-js';
import type { ApiError, Status } from '../../errors';

const GRPC_STATUS: Record<Status, status> = {
  invalid_argument: status.INVALID_ARGUMENT,
  unauthenticated: status.UNAUTHENTICATED,
  not_found: status.NOT_FOUND,
  unimplemented: status.UNIMPLEMENTED,
  already_exists: status.ALREADY_EXISTS,
  failed_precondition: status.FAILED_PRECONDITION,
  deadline_exceeded: status.DEADLINE_EXCEEDED,
  resource_exhausted: status.RESOURCE_EXHAUSTED,
  unavailable: status.UNAVAILABLE,
  internal: status.INTERNAL,
};

export function grpcStatus(error: ApiError): status {
  return GRPC_STATUS[error.status];
}

/** Our error code of DEADLINE_EXCEEDED: the client's deadline came first (the request timeout is the table's request_timeout). */
export const DEADLINE_EXCEEDED_CODE = 'deadline_exceeded';

/** OK, INVALID_ARGUMENT, ... */
export function statusName(code: status): string {
  return status[code] ?? String(code);
}
