// The error room, below every interface: the coded-error table, the failures that name their coded
// error, the one mapping of failures to coded errors, the body-read failures and request ids.
export { ApiError, bodyTooLargeMessage, errorTable, validationError, type ErrorKind, type FieldError, type Status } from './table';
export { CodedFailure, retryAfter } from './failure';
export { BadContentLengthError, BodyTooLargeError, ClientGoneError } from './body';
export { toApiError } from './mapping';
export { requestIdFrom } from './request-id';
