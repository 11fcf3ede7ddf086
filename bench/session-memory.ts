// Host memory of the loaded packs: the growth of this process's RSS from before loading every pack
// (CATCOMFORT_* settings apply, e.g. CATCOMFORT_SESSION_BATCH) to after its warm-up, with the
// session batch sizes each stage kept. Prints one JSON line. An optional argument names another
// tree's root (a worktree of an older commit, built) whose compiled service is measured instead:
//   CATCOMFORT_SESSION_BATCH=8 node dist/bench/session-memory.js [ROOT]
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

async function main(): Promise<void> {
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, '../..'));
  process.env.CATCOMFORT_MODELS_DIR ??= path.join(root, 'models');
  process.env.CATCOMFORT_LOG_LEVEL ??= 'error';
  const { loadConfig } = require(path.join(root, 'dist/src/config')) as typeof import('../src/config');
  // src/packs/ since the reorganisation, src/models/ before it.
  const runtime = ['packs', 'models'].map((room) => path.join(root, `dist/src/${room}/runtime.js`)).find((file) => existsSync(file))!;
  const { loadModels } = require(runtime) as typeof import('../src/packs/runtime');
  const before = process.memoryUsage().rss;
  const { registry } = await loadModels(loadConfig(process.env));
  const sample = readFileSync(path.join(root, 'models/warmup-cat.png'));
  for (const model of registry.list()) await model.warmUp(sample);
  const sizes = Object.fromEntries(registry.list().map((m) => [m.id, m.sessionBatches().detector.map((b) => b.batch)]));
  process.stdout.write(`${JSON.stringify({ root, sessionBatch: process.env.CATCOMFORT_SESSION_BATCH ?? 'auto', detectorSizes: sizes, rssGrowthMiB: Math.round((process.memoryUsage().rss - before) / 2 ** 20) })}\n`);
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
