// A gRPC answer is written only after what its connection had sent by then has been read (server.ts).
import { log } from '../../log';
import { loadAddon } from '../../native/addon';

/**
 * Runs `write` (an answer) once what the call's connection had sent by now has been read. With unread
 * bytes on the socket (a reset among them, perhaps, that came while the loop was busy or waited for
 * the CPU), it waits for the loop's next read of its sockets: two turns, as the first may come before
 * that read in this turn. So a reset that arrived before the answer is written ends the call as
 * CANCELLED, what its client saw, rather than losing the race to an OK. With nothing unread, at once.
 */
export function afterPendingInput(fd: number | null, write: () => void): void {
  if (fd !== null && unreadBytes(fd) > 0) return void setImmediate(() => setImmediate(() => writeLogged(write)));
  write();
}

/** Unread bytes on `fd`; 0 when the system cannot tell (a descriptor closed meanwhile: the answer then goes nowhere anyway). */
function unreadBytes(fd: number): number {
  try {
    return loadAddon().pendingInputBytes(fd);
  } catch {
    return 0;
  }
}

/** A deferred write runs outside the handler's promise: what it throws is logged, never left to end the process. */
function writeLogged(write: () => void): void {
  try {
    write();
  } catch (error) {
    log.error('gRPC answer not written', { error: (error as Error).message });
  }
}
