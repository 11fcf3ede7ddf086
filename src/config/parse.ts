// The kinds of setting: each reads one CATCOMFORT_* variable (unset or blank: its default) and
// throws a ConfigError naming the variable when the value is invalid. `shown` is the default as
// docs/configuration.md's table writes it; `doc` is that table's line.
import os from 'node:os';
import path from 'node:path';

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {}

export interface Setting<T> {
  readonly name: string;
  readonly shown: string;
  readonly doc: string;
  read(env: Env): T;
}

/** The repository (or bundle app folder) this code runs from: dist/src/config/../../.. */
export const appRoot = path.resolve(__dirname, '../../..');

const code = (value: string | number | boolean) => `\`${value}\``;

function setting<T>(name: string, shown: string, doc: string, parse: (raw: string | undefined) => T): Setting<T> {
  return {
    name,
    shown,
    doc,
    read: (env) => {
      const raw = env[name]?.trim();
      return parse(raw === '' ? undefined : raw);
    },
  };
}

function parseInt(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** An integer from min to max; `fallback` may be worked out at read time (then `shown` says how). */
export function int(name: string, fallback: number | (() => number), min: number, max: number, doc: string, shown = code(fallback as number)): Setting<number> {
  return setting(name, shown, doc, (raw) => (raw === undefined ? (typeof fallback === 'function' ? fallback() : fallback) : parseInt(name, raw, min, max)));
}

/** An integer from min to max, or null when unset. */
export function optionalInt(name: string, min: number, max: number, doc: string, shown = 'unset'): Setting<number | null> {
  return setting(name, shown, doc, (raw) => (raw === undefined ? null : parseInt(name, raw, min, max)));
}

export function bool(name: string, fallback: boolean, doc: string): Setting<boolean> {
  return setting(name, code(fallback), doc, (raw) => {
    if (raw === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
    if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
    throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  });
}

export function text(name: string, fallback: string, doc: string): Setting<string> {
  return setting(name, code(fallback), doc, (raw) => raw ?? fallback);
}

export function optionalText(name: string, doc: string, shown = 'unset'): Setting<string | null> {
  return setting(name, shown, doc, (raw) => raw ?? null);
}

/** A folder, relative to the working folder; unset: `fallback` relative to the app's root. */
export function folder(name: string, fallback: string, doc: string, shown = code(`${fallback}/`)): Setting<string> {
  return setting(name, shown, doc, (raw) => path.resolve(raw ?? path.join(appRoot, fallback)));
}

/** A folder; unset: `fallback` in the system's temporary folder. */
export function tmpFolder(name: string, fallback: string, doc: string): Setting<string> {
  return setting(name, code(`$TMPDIR/${fallback}`), doc, (raw) => path.resolve(raw ?? path.join(os.tmpdir(), fallback)));
}

function oneOf<T extends string>(name: string, raw: string, values: readonly T[], casing: 'lower' | 'upper'): T {
  const value = casing === 'upper' ? raw.toUpperCase() : raw.toLowerCase();
  if ((values as readonly string[]).includes(value)) return value as T;
  const list = `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
  throw new ConfigError(`${name} must be ${list}, got "${raw}"`);
}

/** One of `values`, in any case. */
export function choice<T extends string>(name: string, values: readonly T[], fallback: T, doc: string, casing: 'lower' | 'upper' = 'lower'): Setting<T> {
  return setting(name, code(fallback), doc, (raw) => (raw === undefined ? fallback : oneOf(name, raw, values, casing)));
}

/** One of `values`, in any case, or null when unset. */
export function optionalChoice<T extends string>(name: string, values: readonly T[], doc: string, shown: string): Setting<T | null> {
  return setting(name, shown, doc, (raw) => (raw === undefined ? null : oneOf(name, raw, values, 'lower')));
}

function parseDate(name: string, raw: string): Date {
  const date = new Date(raw);
  if (Number.isNaN(date.getTime())) throw new ConfigError(`${name} must be an ISO 8601 date, got "${raw}"`);
  return date;
}

export function date(name: string, fallback: string, doc: string): Setting<Date> {
  return setting(name, code(fallback), doc, (raw) => parseDate(name, raw ?? fallback));
}

export function optionalDate(name: string, doc: string): Setting<Date | null> {
  return setting(name, 'unset', doc, (raw) => (raw === undefined ? null : parseDate(name, raw)));
}

/** Comma-separated entries (blanks dropped), each checked by `check` (a message, or null when fine). */
export function list(name: string, doc: string, shown: string, check: (entry: string) => string | null): Setting<string[]> {
  return setting(name, shown, doc, (raw) => {
    const entries = (raw ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
    for (const entry of entries) {
      const error = check(entry);
      if (error) throw new ConfigError(`${name}: ${error}`);
    }
    return entries;
  });
}

/** Any other kind: `parse` gets the value (undefined when unset) and returns it or a message. */
export function custom<T>(name: string, doc: string, shown: string, parse: (raw: string | undefined) => T | { error: string }): Setting<T> {
  return setting(name, shown, doc, (raw) => {
    const value = parse(raw);
    if (typeof value === 'object' && value !== null && 'error' in value) throw new ConfigError(`${name}: ${(value as { error: string }).error}`);
    return value as T;
  });
}
