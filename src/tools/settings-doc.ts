// `npm run docs:settings`: writes docs/configuration.md's table of settings from src/config/settings.ts.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { withSettingsTable } from '../config/doc-table';

const page = path.resolve(__dirname, '../../../docs/configuration.md');
writeFileSync(page, withSettingsTable(readFileSync(page, 'utf8')));
