// The close codes the service ends a live stream (/v2/stream) with, each with the reason it carries:
// one table, documented in docs/api-v2.md "Live stream" (with 1009, which the WebSocket server sends
// by itself for a frame over the limit). 1000-1015 are the WebSocket protocol's own (RFC 6455
// §7.4.1); 4000-4999 are ours.
export const CLOSE = {
  /** The service is shutting down. */
  goingAway: { code: 1001, reason: 'the service is shutting down' },
  /** The first message was not a settings message with a valid key, or none came in time. */
  unauthorized: { code: 4001, reason: 'missing or invalid API key' },
  /** The client left this many bytes of answers unread. */
  slowReader: { code: 4008, reason: 'answers not read: too many bytes buffered' },
} as const;
