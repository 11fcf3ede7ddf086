#!/usr/bin/env node
// `catcomfort`: the operator command line (docs/cli.md "Command line"). One table entry per
// subcommand; each module is loaded only when its command runs, so `catcomfort keys list` never
// loads the native addon. Exit codes: 0 done, 1 failed, 2 bad usage or configuration.
import { commandList, dispatch, UsageError, type Subcommand } from './args';

const COMMANDS: Record<string, Subcommand> = {
  predict: { args: 'FILE...', summary: 'Analyse local image files through the service pipeline; one JSON line per file', load: async () => (await import('./predict.js')).predictCommand },
  'validate-pack': { args: 'DIR', summary: 'Check a model pack: manifest, sha256 of its files, one test inference', load: async () => (await import('./validate-pack.js')).validatePackCommand },
  'gpu-check': { args: '--photos DIR [--answers FILE]', summary: 'Check the GPU path: sessions per size, answers, load, GPU use, a scan backlog; a table and a verdict; --sweep tunes the batching', load: async () => (await import('./gpu-check.js')).gpuCheckCommand },
  'train-head': { args: '--data DIR|CSV --out PACK_DIR', summary: 'Train the comfort head on labelled photos; writes a model pack', load: async () => (await import('./train-head.js')).trainHead },
  keys: { args: '<command>', summary: 'Issue, list and revoke v1/v2 API keys', load: async () => (await import('./keys.js')).keysCommand },
  credentials: { args: '<command>', summary: 'Issue, list and revoke scan credentials; their webhook URLs and signing secrets', load: async () => (await import('./credentials.js')).credentialsCommand },
  packs: { args: '<command>', summary: 'Load, shadow, canary, promote, roll back and unload pack versions while serving', load: async () => (await import('./packs.js')).packsCommand },
  webhooks: { args: '<command>', summary: "Send a scan's webhook again; receive and verify webhooks locally", load: async () => (await import('./webhooks.js')).webhooksCommand },
};

/** The commands of the former credentials CLI (`npm run credentials -- create-api-key ...`). */
const FORMER_NAMES: Record<string, [string, string]> = {
  'create-scan-credential': ['credentials', 'create'],
  'list-scan-credentials': ['credentials', 'list'],
  'revoke-scan-credential': ['credentials', 'revoke'],
  'create-api-key': ['keys', 'create'],
  'list-api-keys': ['keys', 'list'],
  'revoke-api-key': ['keys', 'revoke'],
};

const USAGE = `Usage: catcomfort <command> [options]

${commandList(COMMANDS)}

"catcomfort <command> --help" describes each command. Settings are the service's CATCOMFORT_*
environment variables (docs/configuration.md "Configuration").
Exit codes: 0 done, 1 failed (predict: at least one file could not be analysed), 2 bad usage or
configuration.
`;

export async function main(argv: string[]): Promise<number> {
  const former = argv[0] !== undefined && Object.hasOwn(FORMER_NAMES, argv[0]) ? FORMER_NAMES[argv[0]] : undefined;
  const args = former ? [...former, ...argv.slice(1)] : argv;
  try {
    return await dispatch(COMMANDS, args, USAGE);
  } catch (error) {
    if (error instanceof UsageError) {
      const synopsis = error.usage.split('\n')[0]!;
      process.stderr.write(`catcomfort: ${error.message}\n${synopsis}\n(--help describes it)\n`);
      return 2;
    }
    process.stderr.write(`catcomfort: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

/** Runs the command line of this process (bin/catcomfort, `node dist/src/cli/main.js`). */
export function run(): void {
  // A reader that goes away (`catcomfort predict ... | head -1`) is no crash: stdout is then
  // no longer writable, and predict stops taking files once the ones in the pipeline are done.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
  });
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}

if (require.main === module) run();
