// Device profiles of the simulated device (native/simulated_device.h), benchmarks and tests only:
// `bench/devices/NAME.json` or a path. Each stage's cost by batch size, split into the calling
// thread's part and the device's own, and how many Runs the device executes at once. How to make
// one from `catcomfort gpu-check` output: docs/gpu.md "A simulated device".
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface StageCost {
  /** Ascending batch sizes; cost is linear between them and keeps the last two's slope past them. */
  batches: number[];
  hostMs: number[];
  deviceMs: number[];
}

export interface DeviceProfile {
  name: string;
  /** Runs the device executes at once (1: one after another). */
  streams: number;
  /** One image's decoding and detector preprocessing on one core of the machine played (CATCOMFORT_BENCH_SIMULATE_DECODE waits it instead). */
  decodeHostMs: number;
  detector: StageCost;
  classifier: StageCost;
}

const DEVICES = path.resolve(__dirname, '../../../bench/devices');

function stageCost(value: unknown, where: string): StageCost {
  const o = value as Partial<StageCost> | null;
  const numbers = (a: unknown): a is number[] => Array.isArray(a) && a.every((x) => typeof x === 'number' && Number.isFinite(x) && x >= 0);
  if (!o || !numbers(o.batches) || !numbers(o.hostMs) || !numbers(o.deviceMs)) throw new Error(`${where}: batches, hostMs and deviceMs must be arrays of numbers >= 0`);
  if (o.batches.length === 0 || o.hostMs.length !== o.batches.length || o.deviceMs.length !== o.batches.length) throw new Error(`${where}: batches, hostMs and deviceMs must have one length, at least 1`);
  if (o.batches.some((b, i) => !Number.isInteger(b) || b < 1 || (i > 0 && b <= o.batches![i - 1]!))) throw new Error(`${where}: batches must be ascending integers >= 1`);
  return { batches: o.batches, hostMs: o.hostMs, deviceMs: o.deviceMs };
}

/** The profile `nameOrPath` names (a bare name is a file of bench/devices/), checked. */
export function readDeviceProfile(nameOrPath: string): DeviceProfile {
  const file = /^[a-z0-9-]+$/.test(nameOrPath) ? path.join(DEVICES, `${nameOrPath}.json`) : path.resolve(nameOrPath);
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`device profile ${nameOrPath}: cannot read ${file}: ${(error as Error).message}`);
  }
  const where = `device profile ${file}`;
  if (typeof raw.name !== 'string' || raw.name === '') throw new Error(`${where}: "name" must be a non-empty string`);
  if (!Number.isInteger(raw.streams) || (raw.streams as number) < 1) throw new Error(`${where}: "streams" must be an integer >= 1`);
  if (typeof raw.decodeHostMs !== 'number' || !(raw.decodeHostMs >= 0)) throw new Error(`${where}: "decodeHostMs" must be a number >= 0`);
  return { name: raw.name, streams: raw.streams as number, decodeHostMs: raw.decodeHostMs, detector: stageCost(raw.detector, `${where} detector`), classifier: stageCost(raw.classifier, `${where} classifier`) };
}
