// ApacheBench (ab, an HTTP/1.0 client without -k) for the proxy tests: finds the binary, runs it
// without blocking the event loop (bounded), and reads the counts from its report.
import { execFile } from 'node:child_process';
import { findExecutable } from './executable';

export type AbProbe = { ab: string } | { ab: null; reason: string };

export function findAb(): AbProbe {
  const found = findExecutable('ab', '/usr/bin/ab', 'apache2-utils');
  return found.path === null ? { ab: null, reason: found.reason } : { ab: found.path };
}

export interface AbReport {
  /** The command line, for failure messages. */
  command: string;
  exitCode: number | null;
  complete: number | null;
  failed: number | null;
  /** The "Non-2xx responses" count; null when ab printed no such line (every answer was 2xx). */
  non2xx: number | null;
  output: string;
}

function count(output: string, label: string): number | null {
  const match = new RegExp(`^${label}:\\s+(\\d+)`, 'm').exec(output);
  return match ? Number(match[1]) : null;
}

/**
 * `ab -l <args> <url>`: -l because answers carry a request id and timings, so their lengths vary
 * and ab would otherwise count every answer of another length as a failed request.
 */
export function runAb(binary: string, args: string[], url: string, timeoutMs: number): Promise<AbReport> {
  const argv = ['-l', '-s', '30', ...args, url];
  const command = `ab ${argv.join(' ')}`;
  return new Promise((resolve) => {
    execFile(binary, argv, { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 4 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      // Without ab's progress lines ("Completed 100 requests") and its banner.
      const output = `${stdout}${stderr}`.replace(/^(Completed \d+ requests|Finished \d+ requests|This is ApacheBench.*|Copyright .*|Licensed to .*)\n/gm, '');
      const exitCode = error ? ((error as { code?: unknown }).code as number | null) ?? null : 0;
      resolve({
        command,
        exitCode: typeof exitCode === 'number' ? exitCode : null,
        complete: count(output, 'Complete requests'),
        failed: count(output, 'Failed requests'),
        non2xx: count(output, 'Non-2xx responses'),
        output: error?.killed ? `${output}\n(killed after ${timeoutMs} ms)` : output,
      });
    });
  });
}
