// The per-request histograms (src/ops/tally-histogram.ts) render exactly as prom-client's own
// Histogram does for the same observations: the same text exposition and the same JSON values.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { TallyHistogram } from '../src/ops/tally-histogram';

test('a tally histogram renders as prom-client renders the same observations', async () => {
  const bounds = [0.001, 0.01, 0.1, 1];
  const theirs = new Registry();
  const ours = new Registry();
  const histogram = new Histogram({ name: 'x_seconds', help: 'h "q" \\ n', labelNames: ['model', 'stage'], buckets: bounds, registers: [theirs] });
  const tally = new TallyHistogram('x_seconds', 'h "q" \\ n', ['model', 'stage'], bounds, ours);
  const observations: Array<[string, string, number]> = [['a', 'queue', 0.0005], ['a', 'queue', 0.01], ['b', 'decode', 2], ['a', 'decode', 0.1], ['b', 'decode', 0]];
  for (const [model, stage, value] of observations) {
    histogram.observe({ model, stage }, value);
    tally.of({ model, stage }).observe(value);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  const json = async (registry: Registry) =>
    (await registry.getMetricsAsJSON()).map((m) => ({ ...m, values: m.values.map((v) => ({ labels: v.labels, value: v.value, metricName: (v as { metricName?: string }).metricName })) }));
  assert.deepEqual(await json(ours), await json(theirs));
  ours.resetMetrics();
  tally.of({ model: 'a', stage: 'queue' }).observe(0.5);
  assert.match(await ours.metrics(), /x_seconds_count\{model="a",stage="queue"\} 1\n/);
});
