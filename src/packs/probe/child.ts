// Child process of the provider probe (src/packs/probe/provider-probe.ts): configures the addon with
// the providers it is given (argv[2]: the runtime settings as JSON), loads every pack (or only the
// pack folder argv[3], a version about to be loaded while serving), and warms each up exactly as the
// service does, announcing each step; then prints the providers' status.
// Whatever a provider does to this process, the service process is not touched.
import type { ProbeLine } from './provider-probe';
import { loadModel, ModelRegistry } from '../registry';
import type { RuntimeConfig } from '../../config';
import { configureAddon, readWarmUpSample, registryOptions, warmUpAll } from '../runtime';

function report(line: ProbeLine): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '') as RuntimeConfig;
  report({ probe: 'step', step: 'configuring the providers' });
  const { addon, info } = configureAddon(config);
  report({ probe: 'step', step: 'building the sessions' });
  const packDir = process.argv[3];
  if (packDir) {
    const model = await loadModel(addon, packDir, registryOptions(config, info));
    await model.warmUp(readWarmUpSample(), (step) => report({ probe: 'step', step }));
  } else {
    const registry = await ModelRegistry.load(addon, registryOptions(config, info));
    await warmUpAll(registry, (step) => report({ probe: 'step', step }));
  }
  report({ probe: 'done', providers: info.providers });
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    report({ probe: 'failed', error: (error as Error)?.message ?? String(error) });
    process.exit(1);
  },
);
