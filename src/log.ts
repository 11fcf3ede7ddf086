// JSON-line logs through pino: debug and info on stdout, warn and error on stderr, each line
// `{"level":"info","time":"<ISO 8601>",...fields,"msg":"..."}`. Writes are synchronous, so the
// lines before a process.exit() are never lost.
import pino from 'pino';

type Level = 'debug' | 'info' | 'warn' | 'error';
type Fields = Record<string, unknown>;

const logger = pino(
  {
    level: 'info',
    base: null,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  },
  pino.multistream(
    [
      { level: 'debug', stream: pino.destination({ fd: 1, sync: true }) },
      { level: 'warn', stream: pino.destination({ fd: 2, sync: true }) },
    ],
    { dedupe: true },
  ),
);

export function setLogLevel(level: Level): void {
  logger.level = level;
}

export const log = {
  /** Whether lines of `level` are written now (to skip building fields nobody will read). */
  enabled: (level: Level) => logger.isLevelEnabled(level),
  debug: (msg: string, fields: Fields = {}) => logger.debug(fields, msg),
  info: (msg: string, fields: Fields = {}) => logger.info(fields, msg),
  warn: (msg: string, fields: Fields = {}) => logger.warn(fields, msg),
  error: (msg: string, fields: Fields = {}) => logger.error(fields, msg),
};
