// A gRPC answer is written only after what its connection had sent by then has been read (server.ts).
import { loadAddon } from '../../native/addon';

/**
 * Runs `write` (an answer) once what the call's connection had sent by now has been read. With unread
 * bytes on the socket (a reset among them, perhaps, that came while the loop was busy or waited for
 * the CPU), it waits for the loop's next read of its sockets: two turns, as the first may come before
 * that read in this turn. So a reset that arrived before the answer is written ends the call as
 * CANCELLED, what its client saw, rather than losing the race to an OK. With nothing unread, at once.
 */
export function afterPendingInput(fd: number | null, write: () => void): void {
  if (fd !== null && loadAddon().pendingInputBytes(fd) > 0) return void setImmediate(() => setImmediate(write));
  write();
}
