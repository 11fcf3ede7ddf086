// `catcomfort gpu-check --sweep`: the configurations it tries and what it concludes from them. The
// grid is batch size (CATCOMFORT_BATCH_MAX_SIZE) x batches in flight (CATCOMFORT_BATCH_IN_FLIGHT)
// x pool threads (CATCOMFORT_POOL_THREADS), ordered farthest point first: the configuration with
// the most images in the pipeline, then each time the one farthest (in log2 steps, each axis
// scaled to its range) from all those before, so that a run cut short by --budget has still
// covered the grid's corners and middle rather than one corner finely. From the rows it picks the
// best (highest in-process req/s at the top client level among rows without a failed request;
// within 1 % of that, the lowest p99) and the knee (the fewest images in flight, in-flight x
// batch, within 5 % of the best's req/s), printed as lines an operator can paste into a shell.
// CUDA graphs are not swept: see NOT_SWEPT.
import { failedRequests, topLevel, type ChildReport } from './report';

export interface SweepPoint {
  batch: number;
  inFlight: number;
  pool: number;
}

/** A best within this share of the top req/s is decided by its p99 instead. */
const TIE_SHARE = 0.01;
/** The knee's req/s is at least this share of the best's. */
const KNEE_SHARE = 0.95;

export const NOT_SWEPT =
  "CUDA graphs: not swept. ONNX Runtime's CUDA provider option enable_cuda_graph needs fixed shapes (which the sessions have) and every node on CUDA, and the addon has no switch for it yet.";

/** The default grid: batch 4, 8, 16, 32 x in flight 2, 4, 8 x pool half the cores and all of them. */
export function defaultGrid(cores: number): { batch: number[]; inFlight: number[]; pool: number[] } {
  return { batch: [4, 8, 16, 32], inFlight: [2, 4, 8], pool: [...new Set([Math.max(1, Math.floor(cores / 2)), cores])] };
}

export function pointName(p: SweepPoint): string {
  return `batch ${p.batch} x in-flight ${p.inFlight} x pool ${p.pool}`;
}

export function pointEnv(p: SweepPoint): Record<string, string> {
  return { CATCOMFORT_BATCH_MAX_SIZE: String(p.batch), CATCOMFORT_BATCH_IN_FLIGHT: String(p.inFlight), CATCOMFORT_POOL_THREADS: String(p.pool) };
}

/** Every point of the grid, farthest point first (see the header). */
export function sweepOrder(batch: number[], inFlight: number[], pool: number[]): SweepPoint[] {
  const axis = (values: number[]) => {
    const lo = Math.log2(Math.min(...values));
    const span = Math.log2(Math.max(...values)) - lo;
    return (v: number) => (span === 0 ? 0 : (Math.log2(v) - lo) / span);
  };
  const [b, f, p] = [axis(batch), axis(inFlight), axis(pool)];
  const left = batch.flatMap((bs) => inFlight.flatMap((fl) => pool.map((pl) => ({ batch: bs, inFlight: fl, pool: pl }))));
  const distance = (x: SweepPoint, y: SweepPoint) => (b(x.batch) - b(y.batch)) ** 2 + (f(x.inFlight) - f(y.inFlight)) ** 2 + (p(x.pool) - p(y.pool)) ** 2;
  // Ties go to more images in flight, then more threads: the likelier best on a device that is not full.
  const larger = (x: SweepPoint, y: SweepPoint) => x.batch * x.inFlight - y.batch * y.inFlight || x.pool - y.pool;
  const order: SweepPoint[] = [];
  while (left.length > 0) {
    const spread = (x: SweepPoint) => (order.length === 0 ? 0 : Math.min(...order.map((y) => distance(x, y))));
    let pick = 0;
    for (let i = 1; i < left.length; i++) {
      const d = spread(left[i]!) - spread(left[pick]!);
      if (d > 1e-9 || (Math.abs(d) <= 1e-9 && larger(left[i]!, left[pick]!) > 0)) pick = i;
    }
    order.push(...left.splice(pick, 1));
  }
  return order;
}

/** Rows the choice may take: measured at the top level, with their batching, and no failed request. */
function candidates(reports: readonly ChildReport[]): ChildReport[] {
  return reports.filter((r) => !r.error && r.batching !== null && topLevel(r) !== undefined && failedRequests(r) === 0);
}

export function best(reports: readonly ChildReport[]): ChildReport | undefined {
  const rows = candidates(reports);
  const top = Math.max(...rows.map((r) => topLevel(r)!.reqPerS));
  const near = rows.filter((r) => topLevel(r)!.reqPerS >= (1 - TIE_SHARE) * top);
  return near.sort((x, y) => topLevel(x)!.p99Ms - topLevel(y)!.p99Ms)[0];
}

export function knee(reports: readonly ChildReport[], chosen: ChildReport): ChildReport | undefined {
  const floor = KNEE_SHARE * topLevel(chosen)!.reqPerS;
  const images = (r: ChildReport) => r.batching!.maxBatchSize * r.batching!.maxInFlight;
  return candidates(reports)
    .filter((r) => topLevel(r)!.reqPerS >= floor)
    .sort((x, y) => images(x) - images(y) || x.batching!.poolThreads - y.batching!.poolThreads || topLevel(y)!.reqPerS - topLevel(x)!.reqPerS)[0];
}

/** A comment line saying what a row reached, and the environment line that sets its batching. */
export function settingLines(label: string, r: ChildReport): string {
  const top = topLevel(r)!;
  const b = r.batching!;
  return (
    `# ${label}: ${top.reqPerS.toFixed(1)} req/s in-process at ${top.clients} clients, p99 ${top.p99Ms.toFixed(0)} ms (${r.name})\n` +
    `export CATCOMFORT_BATCH_MAX_SIZE=${b.maxBatchSize} CATCOMFORT_BATCH_IN_FLIGHT=${b.maxInFlight} CATCOMFORT_POOL_THREADS=${b.poolThreads}\n`
  );
}
