// A hand-written SVG chart of the HTTP load results: throughput versus concurrency (linear) and
// p99 latency versus concurrency (log scale), one line per server. No chart library.
import type { LoadLevel } from './load-worker';

export interface ChartSeries {
  name: string;
  levels: LoadLevel[];
}

const COLOURS = ['#d62728', '#1f77b4', '#2ca02c', '#9467bd', '#ff7f0e'];
const W = 960;
const H = 440;
const PANEL_W = 380;
const PANEL_H = 260;
const TOP = 70;
const LEFTS = [80, 560];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function niceStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

function label(v: number): string {
  if (v >= 1000) return `${+(v / 1000).toFixed(1)}k`;
  return `${+v.toFixed(v < 10 ? 1 : 0)}`;
}

export function renderChart(series: ChartSeries[], subtitle: string): string {
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">POST /v2/predict under load: us vs FastAPI vs Fastify</text>`);
  out.push(`<text x="${W / 2}" y="44" text-anchor="middle" fill="#555">${esc(subtitle)}</text>`);
  const concurrency = [...new Set(series.flatMap((s) => s.levels.map((l) => l.concurrency)))].sort((a, b) => a - b);
  if (concurrency.length === 0) {
    out.push(`<text x="${W / 2}" y="${H / 2}" text-anchor="middle">no HTTP load results</text></svg>`);
    return out.join('\n');
  }
  const lo = Math.log2(concurrency[0]!);
  const hi = Math.log2(concurrency[concurrency.length - 1]!);
  const xOf = (left: number, c: number) => left + (hi === lo ? PANEL_W / 2 : ((Math.log2(c) - lo) / (hi - lo)) * PANEL_W);

  const panels: Array<{ title: string; value: (l: LoadLevel) => number; log: boolean; unit: string }> = [
    { title: 'Throughput (2xx req/s)', value: (l) => l.rps, log: false, unit: 'req/s' },
    { title: 'p99 latency (ms, log scale)', value: (l) => l.p99Ms, log: true, unit: 'ms' },
  ];
  panels.forEach((panel, pi) => {
    const left = LEFTS[pi]!;
    const values = series.flatMap((s) => s.levels.map(panel.value)).filter((v) => Number.isFinite(v) && v > 0);
    const max = values.length ? Math.max(...values) : 1;
    const min = values.length ? Math.min(...values) : 1;
    let yOf: (v: number) => number;
    const ticks: number[] = [];
    if (panel.log) {
      const lmin = Math.floor(Math.log10(min));
      const lmax = Math.ceil(Math.log10(max * 1.05));
      const span = Math.max(1, lmax - lmin);
      yOf = (v) => TOP + PANEL_H - ((Math.log10(v) - lmin) / span) * PANEL_H;
      for (let d = lmin; d <= lmax; d++) for (const m of [1, 2, 5]) if (d + Math.log10(m) <= lmin + span + 1e-9) ticks.push(m * 10 ** d);
    } else {
      const step = niceStep(max * 1.1, 5);
      const top = Math.ceil((max * 1.1) / step) * step;
      yOf = (v) => TOP + PANEL_H - (v / top) * PANEL_H;
      for (let v = 0; v <= top + 1e-9; v += step) ticks.push(v);
    }
    out.push(`<text x="${left + PANEL_W / 2}" y="${TOP - 12}" text-anchor="middle" font-size="13" font-weight="bold">${esc(panel.title)}</text>`);
    out.push(`<rect x="${left}" y="${TOP}" width="${PANEL_W}" height="${PANEL_H}" fill="none" stroke="#999"/>`);
    for (const t of ticks) {
      const y = yOf(t);
      out.push(`<line x1="${left}" x2="${left + PANEL_W}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#e5e5e5"/>`);
      out.push(`<text x="${left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end" fill="#333">${label(t)}</text>`);
    }
    for (const c of concurrency) {
      const x = xOf(left, c);
      out.push(`<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${TOP}" y2="${TOP + PANEL_H}" stroke="#f0f0f0"/>`);
      out.push(`<text x="${x.toFixed(1)}" y="${TOP + PANEL_H + 16}" text-anchor="middle" fill="#333">${c}</text>`);
    }
    out.push(`<text x="${left + PANEL_W / 2}" y="${TOP + PANEL_H + 34}" text-anchor="middle" fill="#333">concurrent connections</text>`);
    out.push(`<text transform="translate(${left - 48},${TOP + PANEL_H / 2}) rotate(-90)" text-anchor="middle" fill="#333">${panel.unit}</text>`);
    series.forEach((s, si) => {
      const colour = COLOURS[si % COLOURS.length]!;
      const points = s.levels
        .filter((l) => Number.isFinite(panel.value(l)) && panel.value(l) > 0)
        .map((l) => [xOf(left, l.concurrency), yOf(panel.value(l)), panel.value(l)] as const);
      if (points.length > 1) {
        out.push(`<polyline fill="none" stroke="${colour}" stroke-width="2.5" points="${points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ')}"/>`);
      }
      for (const [x, y, v] of points) {
        out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="4" fill="${colour}"><title>${esc(s.name)}: ${v.toFixed(1)} ${panel.unit}</title></circle>`);
      }
    });
  });
  // Legend
  const legendY = TOP + PANEL_H + 62;
  let x = 80;
  series.forEach((s, si) => {
    const colour = COLOURS[si % COLOURS.length]!;
    out.push(`<line x1="${x}" x2="${x + 24}" y1="${legendY}" y2="${legendY}" stroke="${colour}" stroke-width="3"/>`);
    out.push(`<text x="${x + 30}" y="${legendY + 4}">${esc(s.name)}</text>`);
    x += 40 + s.name.length * 7.2;
  });
  out.push('</svg>');
  return out.join('\n');
}
