// What a refused request means for the person at the page, one sentence per case: a wrong key, a
// photo over the body limit, a busy service (with its Retry-After), a file that is not an image.
import type { ErrorBody } from './answer.js';

export interface Refusal {
  status: number;
  /** The service's error code, or '' when the answer had none (or there was no answer: status 0). */
  code: string;
  message: string;
  /** Seconds from Retry-After (429, 503), when sent. */
  retryAfter: number | null;
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export function refusalOf(status: number, body: ErrorBody | null, retryAfterHeader: string | null, fileBytes: number): Refusal {
  const code = body?.error?.code ?? '';
  const said = body?.error?.message ?? '';
  const retryAfter = retryAfterHeader !== null && /^\d+$/.test(retryAfterHeader) ? Number(retryAfterHeader) : null;
  const message = ((): string => {
    switch (status) {
      case 401:
        return 'Wrong API key: the service refused it (401). Enter the key again.';
      case 413:
        return `Too large: this photo is ${megabytes(fileBytes)}, a third more once base64-encoded, and the service takes smaller requests (413: ${said || 'request body too large'}). Send a smaller photo.`;
      case 429:
        return `The service is busy (429)${retryAfter === null ? '' : `; retry after ${retryAfter} s`}. ${said}`.trim();
      case 400:
        return code === 'invalid_image' ? `Not an image the service can read (400 invalid_image): ${said}` : `Refused (400 ${code}): ${said}`;
      case 415:
      case 422:
        return `Refused (${status} ${code}): ${said}`;
      case 0:
        return 'The service could not be reached.';
      default:
        return `The service answered ${status}${code ? ` ${code}` : ''}${said ? `: ${said}` : ''}`;
    }
  })();
  return { status, code, message, retryAfter };
}
