// Entry point: `npm start`.
import { ConfigError, loadConfig } from './config';
import { unknownVariables } from './config/unknown';
import { ListenError } from './http/listen-error';
import { linesPerTurn, log, setLogLevel } from './log';
import { useBenchBinding } from './native/addon';
import { startService } from './start';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  // Benchmarks and tests: a simulated device needs the bench binding, and a process loads one binding.
  if (config.benchSimulate !== null) useBenchBinding();
  setLogLevel(config.logLevel);
  linesPerTurn();
  for (const { name, closest } of unknownVariables(process.env)) {
    log.warn(`unknown setting ${name} is ignored; did you mean ${closest}?`, { variable: name, closest });
  }
  // A rejection nobody handled is a bug to log, not a reason to take every request down with it.
  process.on('unhandledRejection', (reason) => {
    log.error('unhandled promise rejection', { error: (reason as Error)?.stack ?? String(reason) });
  });
  const running = await startService(config);
  let stopping = false;
  // SIGTERM (an orchestrator) drains for CATCOMFORT_DRAIN_DELAY_MS first; SIGINT (Ctrl-C), or a second signal, does not wait.
  const stop = (signal: string) => {
    if (stopping) {
      running.endDrainDelay();
      return;
    }
    stopping = true;
    const drainDelayMs = signal === 'SIGTERM' ? config.drainDelayMs : 0;
    log.info('shutting down', { signal, drain_delay_ms: drainDelayMs });
    running.close(drainDelayMs).then(
      () => process.exit(0),
      (error: unknown) => {
        log.error('shutdown failed', { error: String(error) });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((error: unknown) => {
  if (error instanceof ListenError) {
    // The port is busy or not ours to use: a setting to change, like a configuration error.
    process.stderr.write(`Start-up failed: ${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`Start-up failed: ${(error as Error)?.message ?? String(error)}\n`);
  process.exit(1);
});
