// The FILE arguments of `catcomfort predict`: names on the command line, or on stdin with `-`.
// ONNX Runtime's bundled telemetry reads /proc/self/cmdline with a recursive std::regex when its
// environment is created; with an 8 MiB stack it crashes (SIGSEGV) on a command line over about
// 32 KiB (measured: 32,468 bytes passed, 32,577 crashed). So a longer file list moves to stdin of
// a child process before anything loads ONNX Runtime.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** Half the measured crash point. */
export const SAFE_COMMAND_LINE_BYTES = 16 * 1024;

export function commandLineBytes(): number {
  try {
    return readFileSync('/proc/self/cmdline').length;
  } catch {
    return [process.execPath, ...process.execArgv, ...process.argv.slice(1)].reduce((n, a) => n + Buffer.byteLength(a) + 1, 0);
  }
}

/** Names read from `stream` until its end: NUL-separated when it holds a NUL (find -print0), else one per line. */
export async function readNames(stream: NodeJS.ReadableStream): Promise<string[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  const text = Buffer.concat(chunks).toString('utf8');
  const names = text.includes('\0') ? text.split('\0') : text.split(/\r?\n/);
  return names.filter((n) => n !== '');
}

/** Runs `catcomfort predict OPTIONS -` in a child with `names` on its stdin; its exit code. */
export function predictInChild(options: string[], names: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'main.js'), 'predict', ...options, '-'], { stdio: ['pipe', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? 1));
    child.stdin!.on('error', () => undefined); // a child that stops early (bad settings) reads no more
    child.stdin!.end(names.join('\0'));
  });
}
