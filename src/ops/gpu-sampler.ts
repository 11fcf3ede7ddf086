// GPU utilisation during a measured window, as nvidia-smi samples it in its own loop (-lms): the
// CPU-side figures cannot tell a busy GPU from an idle one. Without nvidia-smi on PATH (no NVIDIA
// driver) there is nothing to report. Used by the benchmarks and `catcomfort gpu-check`.
import { spawn, type ChildProcess } from 'node:child_process';

export interface GpuUtilisation {
  samples: number;
  meanPct: number;
  maxPct: number;
  memoryMiBMax: number;
}

interface GpuSample {
  utilPct: number;
  memoryMiB: number;
}

/** One line of `--query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits`, e.g. "37, 1234". */
export function parseSmiLine(line: string): GpuSample | null {
  const fields = line.split(',').map((f) => f.trim());
  if (fields.length !== 2 || fields.some((f) => !/^\d+(\.\d+)?$/.test(f))) return null; // "[N/A]", headers, noise
  return { utilPct: Number(fields[0]), memoryMiB: Number(fields[1]) };
}

export function summarise(output: string): GpuUtilisation | null {
  const samples = output.split('\n').map(parseSmiLine).filter((s): s is GpuSample => s !== null);
  if (samples.length === 0) return null;
  return {
    samples: samples.length,
    meanPct: samples.reduce((sum, s) => sum + s.utilPct, 0) / samples.length,
    maxPct: Math.max(...samples.map((s) => s.utilPct)),
    memoryMiBMax: Math.max(...samples.map((s) => s.memoryMiB)),
  };
}

/** Samples GPU `deviceId` every `intervalMs` until stop(), which resolves to the summary (null: no nvidia-smi, or no sample). */
export function sampleGpu(deviceId: number, intervalMs = 200): { stop(): Promise<GpuUtilisation | null> } {
  let output = '';
  let failed = false;
  let child: ChildProcess | null = null;
  try {
    child = spawn('nvidia-smi', ['-i', String(deviceId), '--query-gpu=utilization.gpu,memory.used', '--format=csv,noheader,nounits', '-lms', String(intervalMs)], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    child.once('error', () => (failed = true)); // ENOENT: not installed
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  } catch {
    failed = true;
  }
  return {
    async stop() {
      if (child && !failed && child.pid !== undefined && child.exitCode === null) {
        const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
        child.kill('SIGKILL');
        await exited;
      }
      return failed ? null : summarise(output);
    },
  };
}

/**
 * A simulated device's busy share over the window (CATCOMFORT_BENCH_SIMULATE), in the same shape:
 * `read` gives its counters (null: none), mean and max are the window's share.
 */
export function sampleSimulatedDevice(read: () => { busyMs: number; elapsedMs: number } | null): { stop(): Promise<GpuUtilisation | null> } {
  const first = read();
  return {
    stop: async () => {
      const last = read();
      if (!first || !last || last.elapsedMs <= first.elapsedMs) return null;
      const pct = (100 * (last.busyMs - first.busyMs)) / (last.elapsedMs - first.elapsedMs);
      return { samples: 1, meanPct: pct, maxPct: pct, memoryMiBMax: 0 };
    },
  };
}
