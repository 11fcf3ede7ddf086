// The README's table of settings, written from the settings table (settings.ts): one row per
// variable, in the table's order.
import { SETTINGS } from './settings';
import { settingsOf } from './shape';

export const TABLE_HEAD = '| Variable | Default | Meaning |\n|---|---|---|\n';

export function settingsTable(): string {
  return TABLE_HEAD + settingsOf(SETTINGS).map((s) => `| \`${s.name}\` | ${s.shown} | ${s.doc} |\n`).join('');
}

/** `readme` with its settings table (from TABLE_HEAD to the first blank line after it) replaced. */
export function withSettingsTable(readme: string): string {
  const start = readme.indexOf(TABLE_HEAD);
  if (start < 0) throw new Error('README.md has no settings table');
  const end = readme.indexOf('\n\n', start);
  return readme.slice(0, start) + settingsTable() + readme.slice(end + 1);
}
