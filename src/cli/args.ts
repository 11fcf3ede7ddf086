// Argument parsing shared by the `catcomfort` subcommands: node:util parseArgs in strict mode,
// `--help`/`-h` on every command, and bad usage as a UsageError (exit code 2) that carries the
// command's usage text.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/**
 * Parses `argv` against `options` (single values only). Returns null after printing `usage` to
 * stdout when --help was asked for.
 */
export function parse(argv: string[], usage: string, options: Options = {}): Parsed | null {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message, usage);
  }
  if (parsed.values.help) {
    process.stdout.write(usage);
    return null;
  }
  return { values: parsed.values as Parsed['values'], positionals: parsed.positionals };
}

/** A subcommand: its one-line summary and its entry point, loaded only when it runs. */
export interface Subcommand {
  /** Its arguments as the usage text shows them, e.g. `--name NAME`. */
  args?: string;
  summary: string;
  load: () => Promise<(argv: string[]) => Promise<number>>;
}

/**
 * Runs `argv[0]` of `table` with the rest of `argv`; no name, `help` or `--help` prints `usage`
 * (no name: as a usage error).
 */
export async function dispatch(table: Record<string, Subcommand>, argv: string[], usage: string): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) throw new UsageError('no command given', usage);
  if (name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(usage);
    return 0;
  }
  const command = Object.hasOwn(table, name) ? table[name] : undefined;
  if (!command) throw new UsageError(`unknown command "${name}"`, usage);
  return (await command.load())(rest);
}

/** The lines of a usage text that list `table`'s commands. */
export function commandList(table: Record<string, Subcommand>): string {
  const synopsis = Object.entries(table).map(([name, c]) => [c.args ? `${name} ${c.args}` : name, c.summary] as const);
  const width = Math.max(...synopsis.map(([s]) => s.length)) + 3;
  return synopsis.map(([s, summary]) => `  ${s.padEnd(width)}${summary}`).join('\n');
}

/** Exactly `count` positional arguments, or a usage error naming what they are. */
export function positionals(parsed: Parsed, count: number, what: string, usage: string): string[] {
  if (parsed.positionals.length !== count) {
    throw new UsageError(count === 0 ? 'this command takes no arguments' : `expected ${count} argument(s): ${what}`, usage);
  }
  return parsed.positionals;
}

/** `--name NAME` of the create commands: 1-200 characters after trimming. */
export function requiredName(parsed: Parsed, usage: string): string {
  positionals(parsed, 0, '', usage);
  const name = typeof parsed.values.name === 'string' ? parsed.values.name.trim() : '';
  if (name === '') throw new UsageError('--name NAME is required', usage);
  if (name.length > 200) throw new UsageError('--name must be at most 200 characters', usage);
  return name;
}
