// A Prometheus histogram for observations made on every request: each label set's series is
// looked up once and kept by the caller (prom-client's Histogram hashes the labels on every
// observe, which cost the main thread a tenth of its time per request), and the registry renders
// it as it renders prom-client's own histograms (the same lines, in the same order).
import type { Histogram, Registry } from 'prom-client';

/** One label set's counts: observe into it directly. */
export class HistogramSeries {
  /** Per bucket (not cumulative), the last one past every bound. */
  private readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }

  /** The count at or below each bound, in bound order. */
  cumulative(): number[] {
    let total = 0;
    return this.bounds.map((_, i) => (total += this.counts[i]!));
  }
}

interface Value {
  metricName: string;
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
}

export class TallyHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Histogram);
  }

  /** The series of `labels` (made on first use), to keep and observe into. */
  of(labels: Record<L, string>): HistogramSeries {
    const key = this.labelNames.map((name) => labels[name]).join('\u0000');
    let series = this.series.get(key);
    if (!series) this.series.set(key, (series = new HistogramSeries({ ...labels }, this.bounds)));
    return series;
  }

  /** As prom-client's getForPromString: per series its buckets, +Inf, sum and count, the series' labels shared. */
  getForPromString(): { name: string; help: string; type: string; aggregator: string; values: Value[] } {
    const values: Value[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      s.cumulative().forEach((value, i) => values.push({ metricName: bucket, labels: { le: this.bounds[i]! }, sharedLabels: s.labels, value }));
      values.push({ metricName: bucket, labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: {}, sharedLabels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: {}, sharedLabels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** As prom-client's get: the same values with the series' labels merged in. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Array<Omit<Value, 'sharedLabels'>> } {
    const data = this.getForPromString();
    return { ...data, values: data.values.map(({ metricName, labels, sharedLabels, value }) => ({ metricName, labels: { ...labels, ...sharedLabels }, value })) };
  }

  /** Zeroes every series (callers keep theirs). */
  reset(): void {
    for (const s of this.series.values()) s.reset();
  }
}
