// JSON-line logs through pino: debug and info on stdout, warn and error on stderr, each line
// `{"level":"info","time":"<ISO 8601>",...fields,"msg":"..."}`. Writes are synchronous, so the
// lines before a process.exit() are never lost. The service gathers stdout's lines and writes them
// once per turn of the event loop (linesPerTurn: a busy service writes a `request` line per
// request), and whatever is gathered when the process exits, as it exits. The HTTP front's threads
// write lines to the same stdout (the access lines of their direct requests), so no write holds
// more than PIPE_BUF bytes of whole lines: on a pipe such a write is never split nor mixed with another's.
import pino from 'pino';

export type Level = 'debug' | 'info' | 'warn' | 'error';
type Fields = Record<string, unknown>;

/** The most a write to a pipe may hold and stay whole (POSIX PIPE_BUF on Linux). */
export const PIPE_BUF = 4096;

/** Lines written each as they come, or gathered and written at the end of each turn of the loop, at most PIPE_BUF bytes at once (a longer line alone). */
export class LineGatherer {
  private gathered = '';
  private bytes = 0;
  private perTurn = false;

  constructor(private readonly out: { write(text: string): unknown }) {}

  write(line: string): void {
    if (!this.perTurn) return void this.out.write(line);
    const size = Buffer.byteLength(line);
    if (this.bytes + size > PIPE_BUF) this.flushSync();
    if (this.gathered === '') setImmediate(() => this.flushSync());
    this.gathered += line;
    this.bytes += size;
  }

  flushSync(): void {
    if (this.gathered === '') return;
    const text = this.gathered;
    this.gathered = '';
    this.bytes = 0;
    this.out.write(text);
  }

  gatherPerTurn(): void {
    if (this.perTurn) return;
    this.perTurn = true;
    process.on('exit', () => this.flushSync());
  }
}

const stdout = new LineGatherer(pino.destination({ fd: 1, sync: true }));

const logger = pino(
  {
    level: 'info',
    base: null,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  },
  pino.multistream(
    [
      { level: 'debug', stream: stdout },
      { level: 'warn', stream: pino.destination({ fd: 2, sync: true }) },
    ],
    { dedupe: true },
  ),
);

export function setLogLevel(level: Level): void {
  logger.level = level;
}

export function logLevel(): Level {
  return logger.level as Level;
}

/** From now on stdout's lines are written once per turn of the event loop (and at exit), not one by one. */
export function linesPerTurn(): void {
  stdout.gatherPerTurn();
}

export const log = {
  /** Whether lines of `level` are written now (to skip building fields nobody will read). */
  enabled: (level: Level) => logger.isLevelEnabled(level),
  debug: (msg: string, fields: Fields = {}) => logger.debug(fields, msg),
  info: (msg: string, fields: Fields = {}) => logger.info(fields, msg),
  warn: (msg: string, fields: Fields = {}) => logger.warn(fields, msg),
  error: (msg: string, fields: Fields = {}) => logger.error(fields, msg),
};
