// Our coded errors as gRPC status codes: one row per kind of the error table (src/http/errors.ts).
import { status } from '@grpc/grpc-js';
import type { ErrorKind } from '../../http/errors';

export const GRPC_STATUS: Record<ErrorKind, status> = {
  invalid_image: status.INVALID_ARGUMENT,
  unauthorized: status.UNAUTHENTICATED,
  model_not_found: status.NOT_FOUND,
  not_found: status.NOT_FOUND,
  method_not_allowed: status.UNIMPLEMENTED,
  idempotency_conflict: status.ALREADY_EXISTS,
  bad_request: status.INVALID_ARGUMENT,
  request_timeout: status.DEADLINE_EXCEEDED,
  payload_too_large: status.RESOURCE_EXHAUSTED,
  uri_too_long: status.INVALID_ARGUMENT,
  unsupported_media_type: status.INVALID_ARGUMENT,
  invalid_request: status.INVALID_ARGUMENT,
  overloaded: status.UNAVAILABLE, // retry later, as HTTP's 429 with Retry-After
  auth_throttled: status.RESOURCE_EXHAUSTED,
  header_too_large: status.RESOURCE_EXHAUSTED,
  internal_error: status.INTERNAL,
  not_implemented: status.UNIMPLEMENTED,
  unavailable: status.UNAVAILABLE,
  store_unavailable: status.UNAVAILABLE,
  http_version_not_supported: status.UNIMPLEMENTED,
};

/** Our error code of DEADLINE_EXCEEDED: the client's deadline came first (the request timeout is the table's request_timeout). */
export const DEADLINE_EXCEEDED_CODE = 'deadline_exceeded';

/** OK, INVALID_ARGUMENT, ... */
export function statusName(code: status): string {
  return status[code] ?? String(code);
}
