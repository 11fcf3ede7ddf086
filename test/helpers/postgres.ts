// PostgreSQL for tests. In order:
//  1. CATCOMFORT_TEST_DATABASE_URL: use that server (each test database is created on it).
//  2. PostgreSQL server binaries (initdb, pg_ctl; found in CATCOMFORT_TEST_PG_BIN,
//     /usr/lib/postgresql/<newest>/bin, or PATH): a throwaway cluster in a temp folder, on a free
//     127.0.0.1 port with its unix socket inside that folder, fsync on, trust auth, stopped and
//     deleted by stop(). As root, initdb refuses to run, so the cluster runs as user `postgres`
//     (or `nobody`) through runuser.
//  3. Otherwise null with the reason, and the caller skips its PostgreSQL tests.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import pg from 'pg';
import { freePort } from '../../bench/common';
import { cleanupOnExit } from './cleanup-on-exit';

export interface TestPostgres {
  /** Where the server is (no database part). */
  description: string;
  /** Creates a fresh, empty database and returns its URL. */
  createDatabase(): Promise<string>;
  /** An outage: the server stopped (`pg_ctl stop -m fast`) and started again on the same port; throwaway clusters only. */
  outage?: { serverDown(): void; serverUp(): void };
  stop(): Promise<void>;
}

export type PostgresProbe = { pg: TestPostgres } | { pg: null; reason: string };

function findBinDir(): string | null {
  const candidates: string[] = [];
  if (process.env.CATCOMFORT_TEST_PG_BIN) candidates.push(process.env.CATCOMFORT_TEST_PG_BIN);
  const debianRoot = '/usr/lib/postgresql';
  if (fs.existsSync(debianRoot)) {
    const versions = fs
      .readdirSync(debianRoot)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) candidates.push(path.join(debianRoot, v, 'bin'));
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) if (dir) candidates.push(dir);
  for (const dir of candidates) {
    if (['initdb', 'pg_ctl', 'postgres'].every((b) => fs.existsSync(path.join(dir, b)))) return dir;
  }
  return null;
}

function userExists(name: string): { uid: number; gid: number } | null {
  const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) return null;
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

let counter = 0;

function databaseFactory(baseUrl: string): () => Promise<string> {
  return async () => {
    const name = `catcomfort_test_${process.pid}_${Date.now()}_${counter++}`;
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    const url = new URL(baseUrl);
    url.pathname = `/${name}`;
    return url.toString();
  };
}

export async function startTestPostgres(): Promise<PostgresProbe> {
  const external = process.env.CATCOMFORT_TEST_DATABASE_URL?.trim();
  if (external) {
    return {
      pg: {
        description: 'CATCOMFORT_TEST_DATABASE_URL',
        createDatabase: databaseFactory(external),
        stop: async () => undefined,
      },
    };
  }
  const bin = findBinDir();
  if (bin === null) {
    return {
      pg: null,
      reason:
        'no CATCOMFORT_TEST_DATABASE_URL and no PostgreSQL server binaries (initdb, pg_ctl, postgres) in ' +
        '/usr/lib/postgresql/*/bin or PATH; install them (Debian: apt-get install -y postgresql) or set the URL',
    };
  }
  const isRoot = process.getuid?.() === 0;
  let runAs: string | null = null;
  if (isRoot) {
    runAs = ['postgres', 'nobody'].find((u) => userExists(u) !== null) ?? null;
    if (runAs === null) return { pg: null, reason: 'running as root and no non-root user (postgres, nobody) to run PostgreSQL as' };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catcomfort-pg-'));
  const dataDir = path.join(dir, 'data');
  if (runAs !== null) {
    const ids = userExists(runAs)!;
    fs.chownSync(dir, ids.uid, ids.gid);
  }
  fs.chmodSync(dir, 0o700);
  const run = (program: string, args: string[]) => {
    const full = path.join(bin, program);
    const r =
      runAs === null
        ? spawnSync(full, args, { encoding: 'utf8', timeout: 60_000 })
        : spawnSync('runuser', ['-u', runAs, '--', full, ...args], { encoding: 'utf8', timeout: 60_000 });
    return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
  };
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });

  const init = run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync']);
  if (!init.ok) {
    cleanup();
    return { pg: null, reason: `initdb failed: ${init.output.trim().slice(-500)}` };
  }
  let port = 0;
  let started = false;
  let lastOutput = '';
  const startOn = (p: number) => {
    const options = [`-c listen_addresses=127.0.0.1`, `-p ${p}`, `-c unix_socket_directories=${dir}`, `-c fsync=on`, `-c max_connections=100`].join(' ');
    return run('pg_ctl', ['-D', dataDir, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', '-o', options, 'start']);
  };
  for (let attempt = 0; attempt < 3 && !started; attempt += 1) {
    port = await freePort();
    const start = startOn(port);
    started = start.ok;
    lastOutput = start.output;
  }
  if (!started) {
    const log = fs.existsSync(path.join(dir, 'server.log')) ? fs.readFileSync(path.join(dir, 'server.log'), 'utf8') : '';
    cleanup();
    return { pg: null, reason: `pg_ctl start failed: ${lastOutput.trim().slice(-300)} ${log.slice(-500)}` };
  }
  let stopped = false;
  const stopSync = () => {
    if (stopped) return;
    stopped = true;
    run('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
    cleanup();
  };
  // A test run that crashes or is interrupted still stops the server.
  const onExit = cleanupOnExit(stopSync);
  const baseUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    pg: {
      description: `throwaway cluster (${bin}) on 127.0.0.1:${port}`,
      createDatabase: databaseFactory(baseUrl),
      outage: {
        serverDown: () => {
          const r = run('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
          if (!r.ok) throw new Error(`pg_ctl stop failed: ${r.output}`);
        },
        serverUp: () => {
          const r = startOn(port);
          if (!r.ok) throw new Error(`pg_ctl start failed: ${r.output}`);
        },
      },
      stop: async () => {
        onExit.unregister();
        stopSync();
      },
    },
  };
}

/**
 * One PostgreSQL for the tests of a file or suite: started before them, stopped after. `pg` is
 * null when none can be had, and `skip` says why (for t.skip).
 */
export function usePostgres(): { readonly pg: TestPostgres | null; readonly skip: string } {
  const state: { pg: TestPostgres | null; skip: string } = { pg: null, skip: '' };
  before(async () => {
    const probe = await startTestPostgres();
    if (probe.pg) state.pg = probe.pg;
    else state.skip = `PostgreSQL not available: ${probe.reason}`;
  });
  after(() => state.pg?.stop());
  return state;
}
