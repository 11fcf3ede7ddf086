// The kinds of setting particular to this service, built on the generic ones of parse.ts: API and
// admin keys, execution providers, the webhook retry schedule, trusted proxy addresses, and the
// ffmpeg binary (the one in its npm package unless one is named).
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from './retry-schedule';
import { custom, list, type Setting } from './parse';

export type ProviderName = 'tensorrt' | 'cuda' | 'cpu';
const PROVIDERS: readonly ProviderName[] = ['tensorrt', 'cuda', 'cpu'];

/** Comma-separated keys of 16-256 printable ASCII characters. */
export function keys(name: string, doc: string): Setting<string[]> {
  return list(name, doc, 'unset', (key) => (/^[\x21-\x7e]{16,256}$/.test(key) ? null : 'each key must be 16-256 printable ASCII characters without spaces'));
}

/** Ordered providers, each known, without repeats; cpu always last if not named. */
export function providers(name: string, doc: string): Setting<ProviderName[]> {
  return custom(name, doc, '`cpu`', (raw) => {
    const names = (raw ?? 'cpu').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
    const unknown = names.find((n) => !(PROVIDERS as readonly string[]).includes(n));
    if (unknown !== undefined) return { error: `unknown provider "${unknown}" (known: ${PROVIDERS.join(', ')})` };
    const ordered = [...new Set(names as ProviderName[])];
    if (!ordered.includes('cpu')) ordered.push('cpu');
    return ordered;
  });
}

/** Waits after failed attempts 1..n (retry-schedule.ts), in ms. */
export function retrySchedule(name: string, doc: string): Setting<number[]> {
  return custom(name, doc, `\`${DEFAULT_RETRY_SCHEDULE}\``, (raw) => {
    try {
      return parseRetrySchedule(raw ?? DEFAULT_RETRY_SCHEDULE);
    } catch (error) {
      return { error: (error as Error).message };
    }
  });
}

/** Checks one address or address/prefix entry; returns an error text or null. */
function addressEntryError(entry: string): string | null {
  const [address, prefix, extra] = entry.split('/');
  const family = net.isIP(address ?? '');
  if (family === 0 || extra !== undefined) return `"${entry}" is not an IP address or CIDR`;
  if (prefix === undefined) return null;
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return `"${entry}": the prefix length must be 0-${max}`;
  return null;
}

/** Comma-separated IP addresses and CIDRs (`10.0.0.0/8`), empty when unset. */
export function addresses(name: string, doc: string): Setting<string[]> {
  return list(name, doc, 'empty', addressEntryError);
}

/** The ffmpeg shipped in an npm package (used unless CATCOMFORT_FFMPEG names another); null when that package is not installed. */
export function defaultFfmpegPath(): string | null {
  try {
    return path.join(path.dirname(createRequire(__filename).resolve('@ffmpeg-installer/linux-x64/package.json')), 'ffmpeg');
  } catch {
    return null;
  }
}

/** An ffmpeg binary: the value, else the npm package's (null when there is none). */
export function ffmpeg(name: string, doc: string): Setting<string | null> {
  return custom(name, doc, 'bundled', (raw) => raw ?? defaultFfmpegPath());
}
