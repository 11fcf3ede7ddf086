// `catcomfort packs ...`: pack versions changed while the service serves, through its admin
// listener (CATCOMFORT_ADMIN_URL, else http://127.0.0.1:$CATCOMFORT_ADMIN_PORT; key in
// CATCOMFORT_ADMIN_KEY). Paths are the service host's: `load DIR` names a folder the service reads.
import path from 'node:path';
import { adminClientFrom } from '../config';
import { describeRole } from '../packs/versions';
import { commandList, dispatch, parse, positionals, UsageError, type Subcommand } from './args';

const COMMANDS: Record<string, Subcommand> = {
  list: { summary: 'Each pack id with its loaded versions and their roles', load: async () => list },
  load: { args: 'DIR [--shadow [P%] | --canary P%]', summary: 'Load, check and warm up the pack in DIR; a new version of a loaded id waits beside it (standby)', load: async () => load },
  route: { args: 'ID@VERSION --shadow [P%] | --canary P% | --standby', summary: 'Give the version beside the serving one a role (a shadow runs beside P% of requests, default all)', load: async () => route },
  promote: { args: 'ID@VERSION', summary: 'Make that version serve; the one that served stays loaded as previous', load: async () => promote },
  rollback: { args: 'ID', summary: 'The previous version serves again', load: async () => rollback },
  unload: { args: 'ID@VERSION | ID', summary: 'Unload the version beside the serving one, or a whole pack id', load: async () => unload },
  fleet: { summary: "Each pack's recorded generation, and each instance sharing the store: last sync, converged or not, its versions", load: async () => fleet },
};

const USAGE = `Usage: catcomfort packs <command>

Pack versions, changed while the service serves (docs/packs.md "Rolling out a pack"). Talks to the
service's admin listener: CATCOMFORT_ADMIN_URL (default http://127.0.0.1:$CATCOMFORT_ADMIN_PORT)
with the key in CATCOMFORT_ADMIN_KEY (CATCOMFORT_ADMIN_KEYS, or catcomfort keys create --admin).

${commandList(COMMANDS)}

Exit codes: 0 done, 1 refused or failed (the service says why), 2 bad usage.
`;

type Answer = Record<string, any> | null;

async function call(method: 'GET' | 'POST', route: string, body?: Record<string, unknown>, print: (answer: Answer) => void = printPacks): Promise<number> {
  const { url, key } = adminClientFrom();
  if (!url) throw new UsageError('set CATCOMFORT_ADMIN_URL or CATCOMFORT_ADMIN_PORT (where the admin listener is)', USAGE);
  if (!key) throw new UsageError('set CATCOMFORT_ADMIN_KEY (an admin key)', USAGE);
  let response: Response;
  try {
    response = await fetch(`${url.replace(/\/$/, '')}${route}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch (error) {
    throw new Error(`cannot reach the admin listener at ${url}: ${(error as Error).cause ?? (error as Error).message}`);
  }
  const answer = (await response.json().catch(() => null)) as Answer;
  if (!response.ok) {
    process.stderr.write(`${answer?.error?.code ?? response.status}: ${answer?.error?.message ?? 'no answer'}\n`);
    return 1;
  }
  print(answer);
  return 0;
}

/** An action's result, or the listing: each pack id with its versions, then the versions being loaded. */
function printPacks(answer: Answer): void {
  if (answer?.versions) process.stdout.write(`${answer.pack}: ${answer.versions}\n`);
  else for (const p of answer?.packs ?? []) process.stdout.write(`${p.id}\t${p.versions.map((v: any) => `${v.version} ${describeRole(v.role, v.share)}`).join(', ')}\n`);
  for (const [name, state] of Object.entries(answer?.loading ?? {})) process.stdout.write(`${name}\t${state}\n`);
}

/** The fleet view: a line per recorded pack, then one per instance. */
function printFleet(answer: Answer): void {
  for (const r of answer?.recorded ?? []) {
    const versions = r.unloaded ? 'unloaded' : [`${r.serving} serving`, ...(r.other ? [`${r.other.version} ${describeRole(r.other.role, r.other.share)}`] : [])].join(', ');
    process.stdout.write(`recorded\t${r.pack}\tgeneration ${r.generation}\t${versions}\tby ${r.updated_by} at ${r.updated_at}\n`);
  }
  for (const i of answer?.instances ?? []) {
    const state = i.stale ? 'STALE' : i.converged ? 'converged' : 'BEHIND';
    const packs = Object.entries(i.versions as Record<string, Record<string, string>>)
      .map(([id, roles]) => `${id}@${i.applied[id] ?? 0}: ${Object.entries(roles).map(([v, role]) => `${v} ${role}`).join(', ')}`)
      .join('; ');
    process.stdout.write(`instance\t${i.instance}${i.self ? ' (this one)' : ''}\tsynced ${(i.since_sync_ms / 1000).toFixed(1)} s ago\t${state}\t${packs}\n`);
  }
}

const PERCENT = /^(\d+(?:\.\d+)?)%?$/;

/** `--canary 10%` -> 0.1. */
function share(option: 'canary' | 'shadow', text: string | boolean | undefined): number {
  const m = typeof text === 'string' ? PERCENT.exec(text.trim()) : null;
  const percent = m ? Number(m[1]) : NaN;
  if (!(percent > 0 && percent <= 100)) throw new UsageError(`--${option} takes a share of requests from 0 to 100 %, e.g. --${option} 10%`, USAGE);
  return percent / 100;
}

const ROLE_OPTIONS = { shadow: { type: 'string' }, canary: { type: 'string' }, standby: { type: 'boolean' } } as const;

/** `--shadow` alone is `--shadow 100%`: its share is optional, and parseArgs wants a value for a string option. */
function shadowShareFilled(argv: string[]): string[] {
  return argv.flatMap((arg, i) => (arg === '--shadow' && !PERCENT.test(argv[i + 1] ?? '') ? ['--shadow=100%'] : [arg]));
}

function role(values: Record<string, string | boolean | undefined>, fallback: 'standby' | null): { role: string; share?: number } {
  const given = (['shadow', 'canary', 'standby'] as const).filter((r) => values[r] !== undefined);
  if (given.length > 1) throw new UsageError('give one of --shadow [P%], --canary P%, --standby', USAGE);
  const chosen = given[0] ?? fallback;
  if (chosen === null) throw new UsageError('give one of --shadow [P%], --canary P%, --standby', USAGE);
  return chosen === 'standby' ? { role: chosen } : { role: chosen, share: share(chosen, values[chosen]) };
}

function ref(text: string, versionRequired: boolean): string {
  if (versionRequired && !/^[^@]+@[^@]+$/.test(text)) throw new UsageError(`"${text}" must be ID@VERSION, e.g. bc-v1@1.3.0`, USAGE);
  return text;
}

async function list(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE);
  if (!parsed) return 0;
  positionals(parsed, 0, '', USAGE);
  return call('GET', '/packs');
}

async function fleet(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE);
  if (!parsed) return 0;
  positionals(parsed, 0, '', USAGE);
  return call('GET', '/fleet', undefined, printFleet);
}

async function load(argv: string[]): Promise<number> {
  const parsed = parse(shadowShareFilled(argv), USAGE, ROLE_OPTIONS);
  if (!parsed) return 0;
  const [dir] = positionals(parsed, 1, 'DIR', USAGE) as [string];
  return call('POST', '/packs/load', { dir: path.resolve(dir), ...role(parsed.values, 'standby') });
}

async function route(argv: string[]): Promise<number> {
  const parsed = parse(shadowShareFilled(argv), USAGE, ROLE_OPTIONS);
  if (!parsed) return 0;
  const [pack] = positionals(parsed, 1, 'ID@VERSION', USAGE) as [string];
  return call('POST', '/packs/route', { pack: ref(pack, true), ...role(parsed.values, null) });
}

function single(name: 'promote' | 'rollback' | 'unload', what: string, versionRequired: boolean) {
  return async (argv: string[]): Promise<number> => {
    const parsed = parse(argv, USAGE);
    if (!parsed) return 0;
    const [pack] = positionals(parsed, 1, what, USAGE) as [string];
    return call('POST', `/packs/${name}`, { pack: ref(pack, versionRequired) });
  };
}

const promote = single('promote', 'ID@VERSION', true);
const rollback = single('rollback', 'ID', false);
const unload = single('unload', 'ID@VERSION | ID', false);

export function packsCommand(argv: string[]): Promise<number> {
  return dispatch(COMMANDS, argv, USAGE);
}
