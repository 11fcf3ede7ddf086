// docs/configuration.md's table of settings, written from the settings table (settings.ts): one row per
// variable, in the table's order.
import { SETTINGS } from './settings';
import { settingsOf } from './shape';

export const TABLE_HEAD = '| Variable | Default | Meaning |\n|---|---|---|\n';

export function settingsTable(): string {
  return TABLE_HEAD + settingsOf(SETTINGS).map((s) => `| \`${s.name}\` | ${s.shown} | ${s.doc} |\n`).join('');
}

/** `page` with its settings table (from TABLE_HEAD to the first blank line after it, or the end) replaced. */
export function withSettingsTable(page: string): string {
  const start = page.indexOf(TABLE_HEAD);
  if (start < 0) throw new Error('docs/configuration.md has no settings table');
  const end = page.indexOf('\n\n', start);
  return page.slice(0, start) + settingsTable() + (end < 0 ? '' : page.slice(end + 1));
}
