// JSON-line logs through pino: debug and info on stdout, warn and error on stderr, each line
// `{"level":"info","time":"<ISO 8601>",...fields,"msg":"..."}`. Writes are synchronous, so the
// lines before a process.exit() are never lost. The service gathers stdout's lines and writes them
// once per turn of the event loop (linesPerTurn: a busy service writes a `request` line per
// request), and whatever is gathered when the process exits, as it exits.
import pino from 'pino';

type Level = 'debug' | 'info' | 'warn' | 'error';
type Fields = Record<string, unknown>;

/** Gathered lines past this many characters are written at once, not at the end of the turn. */
const GATHERED_MAX = 16 * 1024;

/** stdout's lines: each written as it comes, or gathered and written at the end of each turn of the loop. */
class StdoutLines {
  private readonly out = pino.destination({ fd: 1, sync: true });
  private gathered = '';
  private perTurn = false;

  write(line: string): void {
    if (!this.perTurn) return void this.out.write(line);
    if (this.gathered === '') setImmediate(() => this.flushSync());
    this.gathered += line;
    if (this.gathered.length > GATHERED_MAX) this.flushSync();
  }

  flushSync(): void {
    if (this.gathered === '') return;
    const text = this.gathered;
    this.gathered = '';
    this.out.write(text);
  }

  gatherPerTurn(): void {
    if (this.perTurn) return;
    this.perTurn = true;
    process.on('exit', () => this.flushSync());
  }
}

const stdout = new StdoutLines();

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
