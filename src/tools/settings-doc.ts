// `npm run docs:settings`: writes README.md's table of settings from src/config/settings.ts.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { withSettingsTable } from '../config/doc-table';

const readme = path.resolve(__dirname, '../../../README.md');
writeFileSync(readme, withSettingsTable(readFileSync(readme, 'utf8')));
