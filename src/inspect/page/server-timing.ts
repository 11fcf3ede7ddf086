// The `Server-Timing` response header (W3C Server Timing) as a list: `name;dur=12.3;desc="text"`
// entries separated by commas. An answer without the header has no timings, and the page shows none.

export interface StageTiming {
  name: string;
  ms: number | null;
  description: string | null;
}

function unquote(value: string): string {
  return value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value;
}

export function parseServerTiming(header: string | null): StageTiming[] {
  if (!header) return [];
  return header
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const [name = '', ...params] = entry.split(';').map((p) => p.trim());
      const timing: StageTiming = { name, ms: null, description: null };
      for (const param of params) {
        const eq = param.indexOf('=');
        const key = (eq < 0 ? param : param.slice(0, eq)).toLowerCase();
        const value = eq < 0 ? '' : unquote(param.slice(eq + 1));
        if (key === 'dur' && Number.isFinite(Number(value))) timing.ms = Number(value);
        if (key === 'desc') timing.description = value;
      }
      return timing;
    });
}
