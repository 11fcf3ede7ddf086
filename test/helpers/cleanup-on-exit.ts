// A throwaway server started by a test is stopped even when the test run exits or is interrupted
// first: `cleanup` (synchronous) runs on exit, SIGINT or SIGTERM, and the signal is then re-raised.
export function cleanupOnExit(cleanup: () => void): { unregister(): void } {
  const onSignal = (signal: NodeJS.Signals) => {
    cleanup();
    process.kill(process.pid, signal);
  };
  process.once('exit', cleanup);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    unregister() {
      process.removeListener('exit', cleanup);
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
    },
  };
}
