// The serving layer side by side: our service and every peer with its networks made free in its
// own way (bench/servers.ts `freeNetworks`: each answers the warm-up photo's result, no decode, no
// network Run), loaded in turn with the same /v2/predict bodies at BENCH_OVERHEAD_CONCURRENCY: what
// is left is HTTP, the JSON body, validation, dispatch and the answer. Per level the CPU seconds of
// each server's process tree in the measured window are taken too (bench/process-cpu.ts).
import { ensureFastifyModules, ensurePythonPeer } from './install-peers';
import { log, SERVER_NAMES, type BenchOptions, type Precision, type ServerName } from './common';
import { runLoad, type LoadLevel } from './load';
import { API_KEY, startServer, stopServer, waitReady, type Started } from './servers';

export interface OverheadRun {
  name: ServerName;
  description: string;
  levels: LoadLevel[];
  error?: string;
}

/** The Python interpreter a server needs (bench/.venv, installed on first use), or null. */
async function prepare(name: ServerName, python: string): Promise<string | null> {
  if (name === 'fastify') await ensureFastifyModules();
  if (name !== 'fastapi' && name !== 'ray') return null;
  return ensurePythonPeer({ python }, name === 'ray' ? 'ray-serve' : 'fastapi');
}

export async function overheadRuns(
  o: BenchOptions,
  precision: Precision,
  settings: Record<string, string>,
  readyBody: string,
  readyTimeoutS: number,
): Promise<OverheadRun[]> {
  const runs: OverheadRun[] = [];
  for (const name of SERVER_NAMES) {
    const run: OverheadRun = { name, description: '', levels: [] };
    runs.push(run);
    let server: Started | null = null;
    try {
      const python = await prepare(name, process.env.BENCH_PYTHON ?? 'python3');
      log(`overhead, ${name}: starting with its networks free`);
      server = await startServer(name, { precision, settings, peerWorkers: o.peerWorkers, python, grpc: false, freeNetworks: true });
      run.description = server.description;
      await waitReady(server, readyBody, readyTimeoutS);
      log(`overhead, ${name}: load at concurrency ${o.overheadConcurrency.join(', ')}`);
      run.levels = await runLoad({ url: server.url, apiKey: API_KEY, concurrency: o.overheadConcurrency, durationS: o.durationS, warmupS: o.warmupS, serverPid: server.child.pid! });
    } catch (error) {
      run.error = (error as Error).message.split('\n').slice(0, 3).join(' ');
      log(`overhead, ${name} failed: ${(error as Error).message}`);
    } finally {
      if (server) await stopServer(server);
    }
  }
  return runs;
}

const LABELS: Record<ServerName, string> = { us: 'us', fastapi: 'FastAPI peer', fastify: 'Fastify peer', ray: 'Ray Serve peer' };

/** CPU seconds of the server's processes per 1,000 answers (any status) in a level's window. */
function cpuPerThousand(l: LoadLevel): number | undefined {
  return l.serverCpuS === undefined || l.responses === 0 ? undefined : (l.serverCpuS / l.responses) * 1000;
}

const cell = (v: number | undefined, digits = 1) => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(digits));
const times = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !(b > 0) ? '–' : `${(a / b).toFixed(2)}x`);

/** latest.md's section: every server's rows, then per peer and level how far ahead we are. */
export function overheadMarkdown(runs: OverheadRun[]): string[] {
  const lines = ['## Serving overhead, networks free', ''];
  lines.push(
    'Every server answers the warm-up photo\'s result with no network Run and no decode in its own way ' +
      '(us: `CATCOMFORT_BENCH_SIMULATE=echo` with `CATCOMFORT_BENCH_SIMULATE_DECODE`, the real native path on a simulated device whose Runs and decode are free; ' +
      'a peer: `PEER_FREE_NETWORKS=1`, its route answering a stored result). The same `/v2/predict` bodies as above: each server still reads the JSON body and validates it; ' +
      'base64, decoding and networks are skipped by all. CPU s per 1,000: user + system seconds of the server\'s whole process tree in the measured window, per answer (bench/process-cpu.ts).',
    '',
  );
  lines.push('| server | clients | req/s | p50 ms | p99 ms | CPU s per 1,000 | non-2xx | errors/timeouts |', '|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const run of runs) {
    for (const l of run.levels) {
      lines.push(`| ${LABELS[run.name]} | ${l.concurrency} | ${cell(l.rps)} | ${cell(l.p50Ms, 2)} | ${cell(l.p99Ms, 2)} | ${cell(cpuPerThousand(l), 2)} | ${l.non2xx} | ${l.errors}/${l.timeouts} |`);
    }
  }
  lines.push('');
  const us = runs.find((r) => r.name === 'us');
  if (us && us.levels.length > 0) {
    lines.push('Ours against each peer (above 1: we are ahead): req/s ours ÷ theirs; latency and CPU per 1,000 theirs ÷ ours.', '');
    lines.push('| peer | clients | req/s | p50 | p99 | CPU per 1,000 |', '|---|---:|---:|---:|---:|---:|');
    for (const peer of runs.filter((r) => r.name !== 'us')) {
      for (const l of peer.levels) {
        const ours = us.levels.find((x) => x.concurrency === l.concurrency);
        if (!ours) continue;
        lines.push(`| ${LABELS[peer.name]} | ${l.concurrency} | ${times(ours.rps, l.rps)} | ${times(l.p50Ms, ours.p50Ms)} | ${times(l.p99Ms, ours.p99Ms)} | ${times(cpuPerThousand(l), cpuPerThousand(ours))} |`);
      }
    }
    lines.push('');
  }
  for (const run of runs) {
    lines.push(`- ${LABELS[run.name]}: ${run.description || '–'}${run.error ? `; **failed:** ${run.error}` : ''}`);
  }
  lines.push('');
  return lines;
}
