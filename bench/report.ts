// The benchmark report: its shape (what bench/run.ts measures and writes to latest.json) and how it
// renders, as latest.md (machine, settings, the fp32-versus-int8 summary, HTTP with our OIP REST and
// gRPC rows beside /v2/predict, the serving overhead with networks free, in-process, agreement and
// micro-benchmark tables) and as latest.svg
// (the /v2/predict lines drawn by bench/chart.ts).
import { renderChart } from './chart';
import { fixturePhotos, fmt, SERVER_NAMES, type BenchOptions, type machineInfo, type Precision, type ServerName } from './common';
import type { InprocessResult } from './inprocess';
import type { LoadLevel } from './load';
import { microMarkdown, type MicroResult } from './micro';
import type { OverheadRun } from './overhead';
import type { Answer, LoadProtocol, OipProtocol } from './protocols';
import type { StreamLatency } from './stream-latency';
import type { GpuUtilisation } from '../src/ops/gpu-sampler';
import { STAGES } from '../src/timing/stage-times';
import { LOOP_COLUMNS, loopCells } from '../src/cli/stage-scrape';

const SERVER_LABELS: Record<ServerName, string> = {
  us: 'us (our HTTP front + native addon)',
  fastapi: 'FastAPI peer',
  fastify: 'Fastify peer',
  ray: 'Ray Serve peer',
};

/** Our other protocols: their rows' names, and short names for the ratio columns. */
const PROTOCOLS: Record<OipProtocol, { label: string; short: string }> = {
  'oip-rest': { label: 'us (OIP REST, binary)', short: 'OIP REST' },
  grpc: { label: 'us (gRPC)', short: 'gRPC' },
};

const REQUEST_LABELS: Record<LoadProtocol, string> = {
  predict: '/v2/predict: JSON, the photo in base64',
  'oip-rest': 'OIP REST infer: JSON header + length-prefixed bytes (binary extension)',
  grpc: 'gRPC ModelInferRequest: protobuf, raw_input_contents',
};

/** A server run's name with its detector precision, e.g. "FastAPI peer, int8". */
export function runLabel(run: Pick<ServerRun, 'name' | 'precision'>): string {
  return `${SERVER_LABELS[run.name]}, ${run.precision}`;
}

/** A protocol row's name with the run's detector precision, e.g. "us (gRPC), int8". */
export function protocolLabel(run: Pick<ServerRun, 'precision'>, protocol: OipProtocol): string {
  return `${PROTOCOLS[protocol].label}, ${run.precision}`;
}

/** Our service loaded over another protocol in its main run, right after its /v2/predict rows (fixture photos). */
export interface ProtocolRun {
  protocol: OipProtocol;
  levels: LoadLevel[];
  /** One request per photo before the load, as for the servers. */
  answers: Record<string, Answer>;
  error?: string;
}

export interface ServerRun {
  name: ServerName;
  /** Detector precision of this run (CATCOMFORT_PRECISION for us, PEER_PRECISION for the peers). */
  precision: Precision;
  /** main: the rows compared across servers; precision: the same server at the other precision (fp32 vs int8). */
  role: 'main' | 'precision';
  description: string;
  levels: LoadLevel[];
  /** The same load with the 12 MP phone photos (bench/phone-photos.ts). */
  phoneLevels: LoadLevel[];
  /** One request per photo before the load: the answer per photo file. */
  answers: Record<string, Answer>;
  /** Our main run only: the same service loaded over OIP REST and gRPC (BENCH_ONLY us-oip, us-grpc). */
  protocols: ProtocolRun[];
  /** Our main run only: per-frame latency over the live stream against /v2/predict at one client (BENCH_ONLY us-stream). */
  stream?: StreamLatency;
  error?: string;
}

export interface Report {
  date: string;
  machine: ReturnType<typeof machineInfo> & { python?: string };
  options: Omit<BenchOptions, 'only'> & { only: string[] };
  ourSettings: Record<string, string>;
  /** HTTP: the main rows' precision, the other precision measured (null: none), and the peers' one level at it. */
  httpPrecision?: { main: Precision; compare: Precision | null; peerConcurrency: number };
  micro?: MicroResult;
  microError?: string;
  inprocess?: InprocessResult;
  inprocessError?: string;
  servers: ServerRun[];
  /** Bytes of the request each protocol measured sends per fixture photo (body; gRPC: the message). */
  requestBytes?: Array<{ protocol: LoadProtocol; mean: number; min: number; max: number }>;
  /** Every server with its networks free (BENCH_ONLY overhead). */
  overhead?: OverheadRun[];
}

type LevelsOf = (run: ServerRun) => LoadLevel[];
const fixtureLevels: LevelsOf = (run) => run.levels;
const phoneLevels: LevelsOf = (run) => run.phoneLevels;

function levelOf(run: ServerRun | undefined, c: number, levels: LevelsOf = fixtureLevels): LoadLevel | undefined {
  return run ? levels(run).find((l) => l.concurrency === c) : undefined;
}

function gpuCell(gpu: GpuUtilisation | null | undefined): string {
  return gpu ? `${fmt(gpu.meanPct)} / ${fmt(gpu.maxPct)}` : '–';
}

function ratio(a: number | undefined, b: number | undefined, digits = 2): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '–';
  return `${(a / b).toFixed(digits)}x`;
}

/** A table's rows: each server's, and with the fixture photos our main run's other protocols after it. */
function tableRows(report: Report, levels: LevelsOf): Array<{ label: string; levels: LoadLevel[] }> {
  return report.servers
    .flatMap((s) => [
      { label: runLabel(s), levels: levels(s) },
      ...(levels === fixtureLevels ? s.protocols.map((p) => ({ label: protocolLabel(s, p.protocol), levels: p.levels })) : []),
    ])
    .filter((r) => r.levels.length > 0);
}

/** Per-server table and our ratios to each peer, for one photo set. */
function httpTables(report: Report, levels: LevelsOf): string[] {
  const lines: string[] = [];
  const servers = report.servers.filter((s) => levels(s).length > 0);
  const rows = tableRows(report, levels);
  const gpu = rows.some((r) => r.levels.some((l) => l.gpu));
  lines.push(`| server | concurrency | req/s | p50 ms | p90 ms | p99 ms | non-2xx | of which 429 | errors/timeouts |${gpu ? ' GPU util mean/max % |' : ''}`);
  lines.push(`|---|---:|---:|---:|---:|---:|---:|---:|---:|${gpu ? '---:|' : ''}`);
  for (const r of rows) {
    for (const l of r.levels) {
      lines.push(
        `| ${r.label} | ${l.concurrency} | ${fmt(l.rps)} | ${fmt(l.p50Ms)} | ${fmt(l.p90Ms)} | ${fmt(l.p99Ms)} | ${l.non2xx} | ${l.status429} | ${l.errors}/${l.timeouts} |` +
          (gpu ? ` ${gpuCell(l.gpu)} |` : ''),
      );
    }
  }
  lines.push('');
  const us = servers.find((s) => s.name === 'us' && s.role === 'main');
  const peers = servers.filter((s) => s.name !== 'us' && s.role === 'main');
  if (us && peers.length > 0) {
    lines.push('### Us versus the peers', '');
    lines.push(`All at the ${us.precision} detector (equal work). Throughput ratio = our req/s ÷ peer req/s (above 1: we serve more); p50/p99 ratio = peer latency ÷ our latency (above 1: we answer faster).`, '');
    lines.push(`| concurrency | ${peers.map((p) => `throughput vs ${p.name} | p50 vs ${p.name} | p99 vs ${p.name}`).join(' | ')} |`);
    lines.push(`|---:|${peers.map(() => '---:|---:|---:').join('|')}|`);
    for (const c of report.options.concurrency) {
      const ours = levelOf(us, c, levels);
      lines.push(`| ${c} | ${peers.map((p) => { const l = levelOf(p, c, levels); return `${ratio(ours?.rps, l?.rps)} | ${ratio(l?.p50Ms, ours?.p50Ms)} | ${ratio(l?.p99Ms, ours?.p99Ms)}`; }).join(' | ')} |`);
    }
    lines.push('');
  }
  return lines;
}

const kib = (bytes: number) => fmt(bytes / 1024);

/** Our OIP REST and gRPC rows against our /v2/predict rows of the same run, and what each sends per photo. */
function protocolTables(report: Report): string[] {
  const us = report.servers.find((s) => s.name === 'us' && s.role === 'main');
  const protocols = us?.protocols.filter((p) => p.levels.length > 0) ?? [];
  if (!us || protocols.length === 0) return [];
  const lines: string[] = ['### Our protocols versus /v2/predict', ''];
  if (us.levels.length > 0) {
    lines.push(
      `The same service process and fixture photos, loaded over each protocol one after the other in this run (${us.precision} detector). ` +
        'Throughput ratio = protocol req/s ÷ /v2/predict req/s (above 1: the protocol serves more); p50/p99 ratio = /v2/predict latency ÷ protocol latency (above 1: the protocol answers faster).',
      '',
    );
    const short = protocols.map((p) => PROTOCOLS[p.protocol].short);
    lines.push(`| concurrency | ${short.map((n) => `throughput ${n} | p50 ${n} | p99 ${n}`).join(' | ')} |`);
    lines.push(`|---:|${protocols.map(() => '---:|---:|---:').join('|')}|`);
    for (const c of report.options.concurrency) {
      const predict = levelOf(us, c);
      lines.push(`| ${c} | ${protocols.map((p) => { const l = p.levels.find((x) => x.concurrency === c); return `${ratio(l?.rps, predict?.rps)} | ${ratio(predict?.p50Ms, l?.p50Ms)} | ${ratio(predict?.p99Ms, l?.p99Ms)}`; }).join(' | ')} |`);
    }
    lines.push('');
  }
  const sizes = report.requestBytes ?? [];
  const predictMean = sizes.find((b) => b.protocol === 'predict')?.mean;
  if (sizes.length > 0) {
    lines.push(`What each sends per photo (the ${fixturePhotos().length} fixture photos; HTTP: the body; gRPC: the protobuf message inside its 5-byte frame):`, '');
    lines.push('| request | mean KiB | min KiB | max KiB | size / /v2/predict |', '|---|---:|---:|---:|---:|');
    for (const b of sizes) lines.push(`| ${REQUEST_LABELS[b.protocol]} | ${kib(b.mean)} | ${kib(b.min)} | ${kib(b.max)} | ${ratio(b.mean, predictMean)} |`);
    lines.push('');
  }
  return lines;
}

/** The live stream's per-frame latency against /v2/predict's at one client (bench/stream-latency.ts). */
function streamTable(report: Report): string[] {
  const stream = report.servers.find((s) => s.name === 'us' && s.role === 'main')?.stream;
  if (!stream) return [];
  return [
    '### Live stream versus /v2/predict, one client',
    '',
    `Each of the ${stream.photos} fixture photos, ${stream.rounds} passes, sent one at a time and waited for: as a frame over one live stream (its bytes) and as \`POST /v2/predict\` over a kept-alive connection (base64 JSON), alternating photo by photo. Ratio = /v2/predict ÷ stream (above 1: the stream answers sooner).`,
    '',
    '| way | p50 ms | p99 ms |',
    '|---|---:|---:|',
    `| /v2/predict, keep-alive | ${fmt(stream.http.p50Ms)} | ${fmt(stream.http.p99Ms)} |`,
    `| live stream | ${fmt(stream.stream.p50Ms)} | ${fmt(stream.stream.p99Ms)} |`,
    `| ratio | ${ratio(stream.http.p50Ms, stream.stream.p50Ms)} | ${ratio(stream.http.p99Ms, stream.stream.p99Ms)} |`,
    '',
  ];
}

/** Our service's stage means at each level of each HTTP protocol (docs/performance.md "Where the time goes"). */
function stageTables(report: Report): string[] {
  const us = report.servers.find((s) => s.name === 'us' && s.role === 'main');
  if (!us) return [];
  const rows = [{ label: '/v2/predict', levels: us.levels }, ...us.protocols.map((p) => ({ label: PROTOCOLS[p.protocol].short, levels: p.levels }))].filter((r) =>
    r.levels.some((l) => l.stagesMs),
  );
  if (rows.length === 0) return [];
  const lines = [
    '### Where the time goes (our service)',
    '',
    'Mean milliseconds per request in each stage during the measured window, from `catcomfort_stage_duration_seconds` scraped before and after it; the native stages are the wall times of the micro-batch each image ran in. ' +
      'Event loop: its busy share in the window, main-thread CPU microseconds per request, and the garbage collector\'s share of that CPU (`catcomfort_event_loop_busy_seconds_total`, `catcomfort_main_thread_cpu_seconds_total`, `catcomfort_gc_seconds_total`; the scrapes themselves included).',
    '',
    `| requests | concurrency | ${STAGES.join(' | ')} | p50 ms | ${LOOP_COLUMNS.join(' | ')} |`,
    `|---|---:|${STAGES.map(() => '---:').join('|')}|---:|${LOOP_COLUMNS.map(() => '---:').join('|')}|`,
  ];
  for (const r of rows) {
    for (const l of r.levels) {
      if (!l.stagesMs) continue;
      lines.push(
        `| ${r.label} | ${l.concurrency} | ${STAGES.map((s) => (l.stagesMs![s] === undefined ? '–' : l.stagesMs![s]!.toFixed(2))).join(' | ')} | ${fmt(l.p50Ms)} | ` +
          `${loopCells(l.eventLoop).join(' | ')} |`,
      );
    }
  }
  lines.push('');
  return lines;
}

/** One server's fixture-photo level at a precision (the main or the precision run). */
function runAt(report: Report, name: ServerName, precision: Precision): ServerRun | undefined {
  return report.servers.find((s) => s.name === name && s.precision === precision && s.levels.length > 0);
}

/** The fp32-versus-int8 figures of every part side by side (micro, in-process, HTTP). */
function precisionSummary(report: Report): string[] {
  const rows: string[] = [];
  const speedUp = (fp32: number | undefined, int8: number | undefined, lowerIsBetter: boolean) =>
    lowerIsBetter ? ratio(fp32, int8) : ratio(int8, fp32);
  const micro = report.micro?.rows.filter((r) => r.group.startsWith('detector Run per image, fp32 vs int8')) ?? [];
  const mf = micro.find((r) => r.name === 'fp32');
  const mi = micro.find((r) => r.name === 'int8');
  if (mf && mi) {
    const f = mf.runP50Ms ?? mf.p50Ms;
    const i = mi.runP50Ms ?? mi.p50Ms;
    rows.push(`| micro: detector session Run, batch 1 (p50 ms per image) | ${fmt(f, 2)} | ${fmt(i, 2)} | ${speedUp(f, i, true)} | ≥ 2x |`);
  }
  const bp = report.inprocess?.byPrecision;
  if (bp && 'fp32' in bp) {
    for (const f of bp.fp32) {
      const i = bp.int8.find((l) => l.concurrency === f.concurrency);
      rows.push(`| in-process, c=${f.concurrency} (req/s) | ${fmt(f.rps)} | ${fmt(i?.rps)} | ${speedUp(f.rps, i?.rps, false)} | ≥ 1.8x |`);
    }
  }
  const hp = report.httpPrecision;
  if (hp?.compare) {
    for (const name of SERVER_NAMES) {
      const f = runAt(report, name, 'fp32');
      const i = runAt(report, name, 'int8');
      if (!f || !i) continue;
      const levels = name === 'us' ? [8, 32] : [hp.peerConcurrency];
      for (const c of levels) {
        const lf = levelOf(f, c);
        const li = levelOf(i, c);
        if (!lf || !li) continue;
        rows.push(`| HTTP, ${SERVER_LABELS[name]}, c=${c} (req/s) | ${fmt(lf.rps)} | ${fmt(li.rps)} | ${speedUp(lf.rps, li.rps, false)} | ${name === 'us' ? '≥ 1.7x' : '–'} |`);
      }
    }
  }
  if (rows.length === 0) return [];
  return [
    '## Detector precision: fp32 versus int8', '',
    'The same work at each precision (fixture photos; the int8 detector is the pack\'s QDQ model, `detector.int8` in its manifest). Speed-up = int8 throughput ÷ fp32 throughput (micro: fp32 time ÷ int8 time).', '',
    '| measure | fp32 | int8 | int8 speed-up | target |',
    '|---|---:|---:|---:|---:|',
    ...rows,
    '',
  ];
}

/** HTTP throughput and latency per server at both precisions, where both were run. */
function httpPrecisionTable(report: Report): string[] {
  if (!report.httpPrecision?.compare) return [];
  const lines: string[] = [];
  for (const name of SERVER_NAMES) {
    const f = runAt(report, name, 'fp32');
    const i = runAt(report, name, 'int8');
    if (!f || !i) continue;
    for (const lf of f.levels) {
      const li = levelOf(i, lf.concurrency);
      if (!li) continue;
      lines.push(
        `| ${SERVER_LABELS[name]} | ${lf.concurrency} | ${fmt(lf.rps)} | ${fmt(lf.p50Ms)} | ${fmt(lf.p99Ms)} | ${fmt(li.rps)} | ${fmt(li.p50Ms)} | ${fmt(li.p99Ms)} | ${ratio(li.rps, lf.rps)} |`,
      );
    }
  }
  if (lines.length === 0) return [];
  return [
    '### HTTP, fp32 versus int8 detector', '',
    `Fixture photos, same load at each precision: us at every concurrency, each peer at c=${report.httpPrecision.peerConcurrency} (its fp32 reference run).`, '',
    '| server | concurrency | fp32 req/s | fp32 p50 ms | fp32 p99 ms | int8 req/s | int8 p50 ms | int8 p99 ms | throughput int8/fp32 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...lines,
    '',
  ];
}

/** One row of "Same answers?": `answers` against the reference's, photo by photo. */
function agreementRow(label: string, answers: Record<string, Answer>, refLabel: string, refAnswers: Record<string, Answer>): string {
  let sameDetection = 0;
  let sameLabel = 0;
  let maxDiff = 0;
  const files = Object.keys(refAnswers);
  for (const f of files) {
    const a = refAnswers[f]!;
    const b = answers[f];
    if (!b) continue;
    if (a.detection === b.detection) sameDetection++;
    if (a.label === b.label) sameLabel++;
    if (a.score !== null && b.score !== null) maxDiff = Math.max(maxDiff, Math.abs(a.score - b.score));
  }
  return `| ${label} | ${refLabel} | ${sameDetection}/${files.length} | ${sameLabel}/${files.length} | ${maxDiff.toFixed(4)} |`;
}

/** latest.md. */
/** CPU seconds of the server's processes per 1,000 answers (any status) in a level's window. */
function cpuPerThousand(l: LoadLevel): number | undefined {
  return l.serverCpuS === undefined || l.responses === 0 ? undefined : (l.serverCpuS / l.responses) * 1000;
}


/** latest.md's section: every server's rows, then per peer and level how far ahead we are. */
function overheadMarkdown(runs: OverheadRun[]): string[] {
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
      lines.push(`| ${SERVER_LABELS[run.name]} | ${l.concurrency} | ${fmt(l.rps)} | ${fmt(l.p50Ms, 2)} | ${fmt(l.p99Ms, 2)} | ${fmt(cpuPerThousand(l), 2)} | ${l.non2xx} | ${l.errors}/${l.timeouts} |`);
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
        lines.push(`| ${SERVER_LABELS[peer.name]} | ${l.concurrency} | ${ratio(ours.rps, l.rps)} | ${ratio(l.p50Ms, ours.p50Ms)} | ${ratio(l.p99Ms, ours.p99Ms)} | ${ratio(cpuPerThousand(l), cpuPerThousand(ours))} |`);
      }
    }
    lines.push('');
  }
  for (const run of runs) {
    lines.push(`- ${SERVER_LABELS[run.name]}: ${run.description || '–'}${run.error ? `; **failed:** ${run.error}` : ''}`);
  }
  lines.push('');
  return lines;
}

export function reportMarkdown(report: Report): string {
  const o = report.options;
  const m = report.machine;
  const lines: string[] = [];
  lines.push('# Benchmark results', '');
  lines.push(`- Date: ${report.date}`);
  lines.push(`- Machine: ${m.cpu} (${m.cpuFeatures.join(', ') || 'no AVX2'}), ${m.cores} cores, ${m.memoryGiB} GiB; ${m.platform}; Node ${m.node}${m.python ? `; ${m.python}` : ''}`);
  lines.push(`- Load: autocannon in a separate process on the same machine, 127.0.0.1; ${fixturePhotos().length} fixture photos (cat and no-cat) rotated across requests; ` +
    `${o.warmupS} s warm-up + ${o.durationS} s measured per concurrency level; latency of 2xx responses` +
    (report.servers.some((s) => s.protocols.some((p) => p.protocol === 'grpc'))
      ? '; gRPC: @grpc/grpc-js in that process, one channel, a closed loop of as many calls in flight as the concurrency.'
      : '.'));
  lines.push(`- Our service: ${Object.entries(report.ourSettings).map(([k, v]) => `\`${k}=${v}\``).join(', ')}`);
  for (const s of report.servers) lines.push(`- ${runLabel(s)}: ${s.description}`);
  const hp = report.httpPrecision;
  lines.push(
    `- Detector precision: micro-benchmarks and in-process main rows at the service's (${report.micro?.config.precision ?? report.inprocess?.precision ?? '–'}; \`CATCOMFORT_PRECISION\` or auto)` +
      (hp ? `; HTTP main rows: us and the peers at ${hp.main}${hp.compare ? `, then each at ${hp.compare} (us at every concurrency, the peers at c=${hp.peerConcurrency} only)` : ''}` : '') +
      '.',
  );
  lines.push('');
  lines.push(...precisionSummary(report));
  lines.push(...streamTable(report));

  const protocolRows = report.servers.some((s) => s.protocols.some((p) => p.levels.length > 0));
  if (report.servers.some((s) => s.levels.length > 0) || protocolRows) {
    lines.push(`## HTTP load: POST /v2/predict${protocolRows ? ', and our OIP REST and gRPC infer' : ''}`, '', ...httpTables(report, fixtureLevels), ...protocolTables(report), ...stageTables(report));
    if (report.servers.some((s) => s.phoneLevels.length > 0)) {
      lines.push('## HTTP load with 12 MP phone photos', '');
      lines.push('Every fixture photo scaled to about 12 megapixels (4000x3000 for 4:3) as a 4:2:0 JPEG (`bench/phone-photos.ts`), same load otherwise.', '');
      lines.push(...httpTables(report, phoneLevels));
    }
  } else if (report.servers.length === 0) {
    lines.push('_No HTTP load run (BENCH_ONLY)._', '');
  }
  lines.push(...httpPrecisionTable(report));
  if (report.overhead) lines.push(...overheadMarkdown(report.overhead));
  for (const s of report.servers.filter((x) => x.error)) lines.push(`**${runLabel(s)} failed:** ${s.error}`, '');
  for (const s of report.servers) for (const p of s.protocols.filter((x) => x.error)) lines.push(`**${protocolLabel(s, p.protocol)} failed:** ${p.error}`, '');

  if (report.inprocess) {
    const ip = report.inprocess;
    lines.push('## In-process pipeline (ModelRegistry / Model.analyze, micro-batcher, no HTTP)', '');
    lines.push(`Batching: max batch ${ip.batching.maxBatchSize}, max delay ${ip.batching.maxQueueDelayUs} µs, in flight ${ip.batching.maxInFlight}, queue ${ip.batching.maxQueue}; pool threads ${ip.poolThreads}, intra-op threads ${ip.intraOpThreads}; base64 strings of the ${ip.photos} photos; ${ip.precision ?? 'fp32'} detector.`, '');
    const gpu = ip.levels.some((l) => l.gpu);
    lines.push(`| concurrency | req/s | p50 ms | p90 ms | p99 ms | failed | batch sizes (size:count) | decode / detect / classify ms (mean) |${gpu ? ' GPU util mean/max % |' : ''}`);
    lines.push(`|---:|---:|---:|---:|---:|---:|---|---:|${gpu ? '---:|' : ''}`);
    for (const l of ip.levels) {
      const sizes = l.batchSizes.map((n, i) => (i > 0 && n > 0 ? `${i}:${n}` : '')).filter(Boolean).join(' ');
      const stages = `${fmt(l.stagesMs.decode, 2)} / ${fmt(l.stagesMs.detect, 2)} / ${fmt(l.stagesMs.classify, 2)}`;
      lines.push(`| ${l.concurrency} | ${fmt(l.rps)} | ${fmt(l.p50Ms)} | ${fmt(l.p90Ms)} | ${fmt(l.p99Ms)} | ${l.failed} | ${sizes} | ${stages} |${gpu ? ` ${gpuCell(l.gpu)} |` : ''}`);
    }
    lines.push('', 'Stage times are what the pipeline reports per request; a batch\'s shared detector and classifier stages count fully for every request in it.');
    lines.push('');
    if (ip.byPrecision && 'fp32' in ip.byPrecision) {
      const bp = ip.byPrecision;
      lines.push('### In-process, fp32 versus int8 detector', '');
      lines.push('The same fixture photos and load at each precision, fp32 measured first (a second registry for the precision the service does not run at).', '');
      lines.push('| concurrency | fp32 req/s | fp32 p50 ms | fp32 detect ms (mean) | int8 req/s | int8 p50 ms | int8 detect ms (mean) | throughput int8/fp32 |');
      lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|');
      for (const f of bp.fp32) {
        const i = bp.int8.find((l) => l.concurrency === f.concurrency);
        lines.push(`| ${f.concurrency} | ${fmt(f.rps)} | ${fmt(f.p50Ms)} | ${fmt(f.stagesMs.detect, 2)} | ${fmt(i?.rps)} | ${fmt(i?.p50Ms)} | ${fmt(i?.stagesMs.detect, 2)} | ${ratio(i?.rps, f.rps)} |`);
      }
      lines.push('');
    } else if (ip.byPrecision && 'note' in ip.byPrecision) lines.push(`_fp32 versus int8 not measured: ${ip.byPrecision.note}._`, '');
    const us = report.servers.find((s) => s.name === 'us' && s.levels.length > 0 && s.precision === (ip.precision ?? 'fp32'));
    if (us) {
      const http32 = levelOf(us, 32);
      const ip32 = ip.levels.find((l) => l.concurrency === 32);
      const http1 = levelOf(us, 1);
      const ip1 = ip.levels.find((l) => l.concurrency === 1);
      lines.push(`At the ${us.precision} detector:`, '');
      lines.push(`- HTTP / in-process throughput at c=32: ${ratio(http32?.rps, ip32?.rps)} (${fmt(http32?.rps)} vs ${fmt(ip32?.rps)} req/s)`);
      lines.push(
        `- Added latency of HTTP at c=1 (our HTTP p50 − in-process p50): ${http1 && ip1 ? `${fmt(http1.p50Ms - ip1.p50Ms, 2)} ms (${fmt(http1.p50Ms, 2)} − ${fmt(ip1.p50Ms, 2)})` : '–'}`,
      );
      lines.push('');
    }
    lines.push('### In-process with 12 MP phone photos: before/after shrink-on-load', '');
    lines.push(`The ${ip.phone.photos} fixture photos scaled to about 12 MP (\`bench/phone-photos.ts\`) as base64 strings; "before": a second registry whose pipelines decode every JPEG at full size (\`jpegShrinkOnLoad: false\`), measured in the same run.`, '');
    lines.push('| concurrency | before: req/s | p50 ms | decode ms (mean) | after: req/s | p50 ms | decode ms (mean) | throughput after/before |');
    lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const after of ip.phone.shrinkOnLoad) {
      const before = ip.phone.fullSizeDecode.find((l) => l.concurrency === after.concurrency);
      lines.push(
        `| ${after.concurrency} | ${fmt(before?.rps)} | ${fmt(before?.p50Ms)} | ${fmt(before?.stagesMs.decode)} | ${fmt(after.rps)} | ${fmt(after.p50Ms)} | ${fmt(after.stagesMs.decode)} | ${ratio(after.rps, before?.rps)} |`,
      );
    }
    lines.push('');
  } else if (report.inprocessError) lines.push(`**In-process benchmark failed:** ${report.inprocessError}`, '');

  const withAnswers = report.servers.filter((s) => Object.keys(s.answers).length > 0);
  const usMain = withAnswers.find((s) => s.name === 'us' && s.role === 'main');
  const protocolAnswers = usMain?.protocols.filter((p) => Object.keys(p.answers).length > 0) ?? [];
  if (usMain && (withAnswers.length > 1 || protocolAnswers.length > 0)) {
    lines.push('## Same answers?', '');
    lines.push('Each photo sent once to each server before its load run, compared with our answer at the same detector precision (resizing kernels differ slightly; the ImageNet network under the untrained reference head magnifies a grey level of difference in a crop, so scores can differ by a few tenths while detection states agree); our other precision, OIP REST and gRPC are compared with our main /v2/predict run (OIP scores are FP32 tensors).', '');
    lines.push('| server | compared with | same detection state | same label | max abs score difference |', '|---|---|---:|---:|---:|');
    for (const p of protocolAnswers) lines.push(agreementRow(protocolLabel(usMain, p.protocol), p.answers, runLabel(usMain), usMain.answers));
    for (const s of withAnswers.filter((x) => x !== usMain)) {
      const ref = s.name === 'us' ? usMain : withAnswers.find((x) => x.name === 'us' && x.precision === s.precision);
      if (ref) lines.push(agreementRow(runLabel(s), s.answers, runLabel(ref), ref.answers));
    }
    lines.push('');
  }

  if (report.micro) lines.push('## Micro-benchmarks (in-process, native addon, tinybench)', '', microMarkdown(report.micro), '');
  else if (report.microError) lines.push(`**Micro-benchmarks failed:** ${report.microError}`, '');
  lines.push('![throughput and p99 latency versus concurrency](latest.svg)', '');
  return lines.join('\n');
}

/** latest.svg: throughput and p99 versus concurrency, one line per server run with more than one level (or a main run). */
export function reportChart(report: Report): string {
  const m = report.machine;
  return renderChart(
    // The peers' one-level runs at the other precision are no line; latest.md has them.
    report.servers.filter((s) => s.levels.length > 1 || (s.levels.length > 0 && s.role === 'main')).map((s) => ({ name: runLabel(s), levels: s.levels })),
    `${m.cpu} (${m.cpuFeatures.join(', ') || 'no AVX2'}), ${m.cores} cores · ${report.date.slice(0, 10)}`,
  );
}
