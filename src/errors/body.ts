// The failures of reading a request body, whichever listener reads it (the public port's
// exchange, the admin listener): over the limit, a bad Content-Length, the client gone.
import { CodedFailure } from './failure';
import { ApiError, bodyTooLargeMessage } from './table';

export class BodyTooLargeError extends CodedFailure {
  constructor(readonly limit: number) {
    super(`Request body exceeds ${limit} bytes`);
  }

  coded(): ApiError {
    return new ApiError('payload_too_large', bodyTooLargeMessage(this.limit), {}, {}, { limit: this.limit });
  }
}

export class ClientGoneError extends CodedFailure {
  constructor() {
    super('Client closed the connection');
  }

  coded(): null {
    return null;
  }
}

/** A Content-Length that is not a plain decimal number. */
export class BadContentLengthError extends CodedFailure {
  constructor() {
    super('Invalid Content-Length header');
  }

  coded(): ApiError {
    return new ApiError('bad_request', 'Invalid Content-Length header.', {}, {}, { header: 'content-length' });
  }
}
