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
