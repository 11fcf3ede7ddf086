// GPU utilisation (src/ops/gpu-sampler.ts, for the benchmarks and gpu-check): nvidia-smi's CSV lines are parsed and
// summarised; without nvidia-smi on PATH there is no figure rather than a failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSmiLine, sampleGpu, summarise } from '../src/ops/gpu-sampler';

test("nvidia-smi's CSV samples are summarised; headers and [N/A] lines are skipped", () => {
  assert.deepEqual(parseSmiLine('37, 1234'), { utilPct: 37, memoryMiB: 1234 });
  for (const noise of ['utilization.gpu [%], memory.used [MiB]', '[N/A], 1234', '', '12']) assert.equal(parseSmiLine(noise), null, noise);
  assert.deepEqual(summarise('0, 500\n[N/A], 510\n60, 800\n90, 700\n'), { samples: 3, meanPct: 50, maxPct: 90, memoryMiBMax: 800 });
  assert.equal(summarise('No devices were found\n'), null);
});

test('without nvidia-smi on PATH the window has no GPU figure', async () => {
  const path = process.env.PATH;
  process.env.PATH = '/nonexistent';
  try {
    const sampler = sampleGpu(0, 50);
    await new Promise((resolve) => setTimeout(resolve, 100)); // the spawn's ENOENT arrives
    assert.equal(await sampler.stop(), null);
  } finally {
    process.env.PATH = path;
  }
});
