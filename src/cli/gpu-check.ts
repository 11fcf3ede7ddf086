// `catcomfort gpu-check`: is the GPU path healthy, what are its figures, and which batching fills
// the device? Each configuration runs in a child process of its own (gpu-check/child.ts: its
// steps, and what each measures). The parent runs, within --budget seconds:
//   - the configured run, from the environment: sessions per size, the photos against the answers,
//     in-process load, HTTP load against a restarted service, and a scan backlog drained
//     (gpu-check/scan-drain.ts); with --write-answers only the photos;
//   - when that one has a problem with a GPU provider active (and not --no-knobs or --sweep), the
//     likely knobs one by one: session batch 1, each cuDNN search mode, pinned memory off;
//   - with --sweep, in-process load over a grid of batch size x batches in flight x pool threads
//     (gpu-check/sweep.ts), then the best again with the scan drain, and the best and knee settings.
// A configuration that would not fit in the time left is skipped with a line saying so. Each row
// is printed, and the --json file rewritten, the moment its configuration ends (gpu-check/rows.ts).
// With --simulate PROFILE the same sequence runs against a simulated device (benchmarks and tests).
// No npm and no network: it runs from the offline bundle (`catcomfort/catcomfort gpu-check`).
import os from 'node:os';
import { writeFileSync } from 'node:fs';
import { parse, UsageError } from './args';
import { Budget } from './gpu-check/budget';
import { child, photoFiles } from './gpu-check/child';
import { problems, STEPS, topLevel, type ChildReport, type Step } from './gpu-check/report';
import { Rows, stageTable } from './gpu-check/rows';
import { endWithParent, runChild } from './gpu-check/spawn';
import { best, defaultGrid, knee, NOT_SWEPT, pointEnv, pointName, settingLines, sweepOrder } from './gpu-check/sweep';
import { readDeviceProfile } from '../native/device-profile';

export { problems } from './gpu-check/report';

const GRID = defaultGrid(os.availableParallelism());

const USAGE = `Usage: catcomfort gpu-check --photos DIR [--answers FILE | --write-answers FILE] [--seconds N] [--json FILE]
                           [--budget SECONDS] [--scans N] [--no-knobs]
                           [--sweep [--batch LIST] [--in-flight LIST] [--pool LIST] [--sweep-http]]
                           [--simulate PROFILE [--simulate-decode] [--cores N]]

Checks the GPU path with the configured providers (CATCOMFORT_EXECUTION_PROVIDERS, e.g. cuda,cpu):
sessions alone at batch 1/2/4/8 (steady and alternating), the packs on the photos of DIR twice
(states against --answers), in-process load at 1, 32, 128 and 256 clients for N seconds each
(default 5), the same over HTTP against the service started on 127.0.0.1, and a backlog of
--scans N scans (default 2000; 0: none) drained by the service's scan workers from an SQLite store
in the data folder (images per second, and their ratio to in-process req/s at 256 clients).
When not healthy with a GPU provider, again with session batch 1, each cuDNN search mode and
pinned memory off (--no-knobs: not).
--sweep: in-process load for each batch size (--batch, default ${GRID.batch.join(',')}) x batches in
flight (--in-flight, default ${GRID.inFlight.join(',')}) x pool threads (--pool, default ${GRID.pool.join(',')}), the
configuration with the most images in flight first, then each time the one farthest from those
before; without sessions, photos and HTTP (--sweep-http: with HTTP); then the best again with
the scan drain; prints the best and the knee (fewest images in flight within 5 % of the best) as
lines to paste. CUDA graphs are not swept (the addon has no switch for them).
--simulate PROFILE: the whole sequence against a simulated device (benchmarks and tests only; every
answer is the warm-up photo's): CATCOMFORT_BENCH_SIMULATE=PROFILE for every child and service it
starts (bench/devices/PROFILE.json or a path; docs/gpu.md "A simulated device"); the GPU column is
the simulated device's busy share. --simulate-decode: decoding simulated too (the profile's
decodeHostMs an image). --cores N: the core count the batching rule and the sweep's pool grid read
(CATCOMFORT_BENCH_CORES) and, unless CATCOMFORT_POOL_THREADS is set, the pool's threads, so this
machine plays one of N cores.
--budget SECONDS (default 480) bounds the whole check: configurations that would not fit are
skipped. Each configuration's row is printed, and --json rewritten with every report so far, as
soon as it ends. --write-answers FILE writes the states of the photos instead (make the reference
on a CPU with CATCOMFORT_PRECISION=fp32).

Exit codes: 0 healthy, 1 not healthy (or the run failed), 2 bad usage.
`;

const KNOBS: Array<[string, Record<string, string>]> = [
  ['session batch 1', { CATCOMFORT_SESSION_BATCH: '1' }],
  ['cuDNN EXHAUSTIVE', { CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'EXHAUSTIVE' }],
  ['cuDNN HEURISTIC', { CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'HEURISTIC' }],
  ['cuDNN DEFAULT', { CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'DEFAULT' }],
  ['pinned memory off', { CATCOMFORT_PINNED_MEMORY: 'false' }],
];

/** The knobs to retry after the configured run: only with a GPU provider active, a problem, and knobs not turned off. */
export function knobsToTry(configured: ChildReport, noKnobs: boolean): typeof KNOBS {
  const gpuActive = configured.providers.some((p) => p !== 'cpu' && !p.startsWith('simulated'));
  return !noKnobs && gpuActive && problems(configured).length > 0 ? KNOBS : [];
}

function wholeNumber(value: string | undefined, fallback: number, min: number, max: number, flag: string): number {
  const n = value === undefined ? fallback : Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${flag} must be a whole number from ${min} to ${max}`, USAGE);
  return n;
}

function numberList(value: string | undefined, fallback: number[], max: number, flag: string): number[] {
  if (value === undefined) return fallback;
  return [...new Set(value.split(',').map((part) => wholeNumber(part.trim(), 0, 1, max, flag)))];
}

const seconds = (ms: number) => Math.max(0, Math.round(ms / 1000));

export async function gpuCheckCommand(argv: string[]): Promise<number> {
  const flag = { type: 'string' } as const;
  const parsed = parse(argv, USAGE, {
    photos: flag, answers: flag, 'write-answers': flag, seconds: flag, json: flag, budget: flag, scans: flag,
    'no-knobs': { type: 'boolean' }, sweep: { type: 'boolean' }, 'sweep-http': { type: 'boolean' }, batch: flag, 'in-flight': flag, pool: flag,
    simulate: flag, 'simulate-decode': { type: 'boolean' }, cores: flag,
    child: flag, steps: flag, deadline: flag,
  });
  if (!parsed) return 0;
  const v = parsed.values as Record<string, string | undefined>;
  const on = (name: string) => parsed.values[name] === true;
  if (!v.photos) throw new UsageError('--photos DIR is needed', USAGE);
  if (v.answers && v['write-answers']) throw new UsageError('give --answers or --write-answers, not both', USAGE);
  const loadSeconds = wholeNumber(v.seconds, 5, 1, 60, '--seconds');
  const budgetSeconds = wholeNumber(v.budget, 480, 1, 86_400, '--budget');
  const scans = wholeNumber(v.scans, 2000, 0, 100_000, '--scans');
  if (!on('sweep') && (v.batch || v['in-flight'] || v.pool || on('sweep-http'))) throw new UsageError('--batch, --in-flight, --pool and --sweep-http go with --sweep', USAGE);
  if (v.simulate === undefined && (on('simulate-decode') || v.cores !== undefined)) throw new UsageError('--simulate-decode and --cores go with --simulate', USAGE);
  if (v.simulate !== undefined) {
    try {
      readDeviceProfile(v.simulate);
    } catch (error) {
      throw new UsageError(`--simulate: ${(error as Error).message}`, USAGE);
    }
    // Every child and every service they start inherits these.
    process.env.CATCOMFORT_BENCH_SIMULATE = v.simulate;
    process.env.CATCOMFORT_BENCH_SIMULATE_DECODE = String(on('simulate-decode'));
  }
  const cores = wholeNumber(v.cores, os.availableParallelism(), 1, 1024, '--cores');
  if (v.cores !== undefined) {
    // The machine played: its cores for the batching rule, and (unless set) a pool thread per core.
    process.env.CATCOMFORT_BENCH_CORES = String(cores);
    process.env.CATCOMFORT_POOL_THREADS ??= process.env.CATCOMFORT_BENCH_CORES;
  }
  const defaults = defaultGrid(cores);
  const grid = { batch: numberList(v.batch, defaults.batch, 64, '--batch'), inFlight: numberList(v['in-flight'], defaults.inFlight, 64, '--in-flight'), pool: numberList(v.pool, defaults.pool, 256, '--pool') };
  if (photoFiles(v.photos).length === 0) throw new UsageError(`no .jpg, .png or .webp photos in ${v.photos}`, USAGE);
  const forward = ['--photos', v.photos, '--seconds', String(loadSeconds), '--scans', String(scans), ...(v.answers ? ['--answers', v.answers] : [])];

  if (v.child !== undefined) {
    const done = endWithParent();
    const steps = new Set((v.steps ?? '').split(',').filter((s): s is Step => (STEPS as readonly string[]).includes(s)));
    const report = await child({ name: v.child, steps, photosDir: v.photos, answersFile: v.answers ?? null, seconds: loadSeconds, scans, deadline: Number(v.deadline) });
    process.stdout.write(`${JSON.stringify(report)}\n`);
    done();
    return 0;
  }

  const out = (text: string) => process.stdout.write(text);
  const budget = new Budget(budgetSeconds);
  const rows = new Rows(out, v.json, { budgetSeconds, seconds: loadSeconds, scans, ...(on('sweep') ? { sweep: grid } : {}) });
  const run = async (name: string, env: Record<string, string>, steps: Step[]) => {
    const report = await runChild(name, env, [...forward, '--steps', steps.join(',')], budget.deadline);
    budget.note(report);
    rows.add(report);
    return report;
  };
  /** Whether a child of `steps` is expected to fit, leaving `keepMs`; prints a line when not. */
  const fits = (name: string, steps: Step[], keepMs = 0, untimedMs = 0) => {
    const needs = budget.expected(steps, untimedMs);
    if (budget.left() >= needs + keepMs) return true;
    out(`skipped: ${name}: needs ~${seconds(needs)} s${keepMs ? ` and ~${seconds(keepMs)} s are kept for the scan drain` : ''}, ${seconds(budget.left())} s of --budget left\n`);
    return false;
  };

  if (v['write-answers']) {
    const report = await run('as configured', {}, ['photos']);
    if (report.photos) writeFileSync(v['write-answers'], `${JSON.stringify(report.photos.states, null, 2)}\n`);
    out(`gpu-check: wrote the states of ${report.photos?.count ?? 0} photos to ${v['write-answers']}\n`);
    rows.write({ finished: true });
    return report.error || !report.photos ? 1 : 0;
  }

  const configured = await run('as configured', {}, on('sweep') ? ['sessions', 'photos', 'load', ...(on('sweep-http') ? ['http' as const] : [])] : ['sessions', 'photos', 'load', 'http', 'scans']);
  const finals: Record<string, unknown> = {};
  if (on('sweep')) {
    const steps: Step[] = on('sweep-http') ? ['load', 'http'] : ['load'];
    const drainSteps: Step[] = ['load', 'scans'];
    // A drain not timed yet: a service start and the scans at the best in-process rate seen so far.
    const drainGuessMs = () => budget.expected([]) + (scans * 1000) / Math.max(1, ...rows.all.map((r) => topLevel(r)?.reqPerS ?? 0));
    for (const point of sweepOrder(grid.batch, grid.inFlight, grid.pool)) {
      const keepMs = scans > 0 ? budget.expected(drainSteps, drainGuessMs()) : 0;
      if (fits(pointName(point), steps, keepMs)) await run(pointName(point), pointEnv(point), steps);
    }
    const chosen = best(rows.all);
    if (chosen) {
      const kneeRow = knee(rows.all, chosen)!;
      const again = `${chosen.name}, again with scans`;
      if (scans > 0 && fits(again, drainSteps, 0, drainGuessMs())) await run(again, chosen.env, drainSteps);
      out(`\n${settingLines('best', chosen)}${settingLines('knee (fewest images in flight within 5 % of the best)', kneeRow)}`);
      Object.assign(finals, { best: chosen.name, bestBatching: chosen.batching, knee: kneeRow.name, kneeBatching: kneeRow.batching });
    } else out('\nbest: none (no configuration measured at the top level without a failed request)\n');
    out(`${NOT_SWEPT}\n`);
  } else {
    if (on('no-knobs')) out('knob retries: off (--no-knobs)\n');
    for (const [name, env] of knobsToTry(configured, on('no-knobs'))) {
      if (fits(name, ['sessions', 'photos', 'load', 'http'])) await run(name, env, ['sessions', 'photos', 'load', 'http']);
    }
  }
  const stages = stageTable(rows.all);
  if (stages) out(`\nWhere the time goes (mean ms per request and stage at each level):\n\n${stages}`);
  const healthy = problems(configured).length === 0;
  out(`\nverdict: ${healthy ? 'healthy' : `NOT healthy as configured: ${problems(configured).join('; ')}`}\n`);
  rows.write({ finished: true, healthy, ...finals });
  return healthy ? 0 : 1;
}
