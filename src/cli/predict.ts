// `catcomfort predict FILE...`: local image files through the service's own pipeline (the pack
// loaded as the service loads it, its micro-batcher, the v2 result mapping), one JSON line per file.
import { readFile } from 'node:fs/promises';
import { ConfigError, loadConfig } from '../config';
import { setLogLevel } from '../log';
import { toApiError } from '../errors';
import { predictedFigures } from '../v2/predict';
import { predictResponse } from '../v2/predict-response';
import { serviceVersion } from '../start';
import { parse, UsageError } from './args';
import { commandLineBytes, predictInChild, readNames, SAFE_COMMAND_LINE_BYTES } from './file-list';
import { loadOneModel, ModelChoiceError } from './load-model';
import { ProgressBar } from './progress';
import type { Model } from '../packs/model';
import { appliedThreshold } from '../packs/routed';

/** Files from which on a progress bar is drawn (when stderr is a terminal). */
const PROGRESS_FROM = 10;

const USAGE = `Usage: catcomfort predict [--model ID] [--threshold T] FILE... | -

Analyses each image file with the service's own pipeline (decoding, detector, classifier, the
pack's cutoffs) and writes one JSON line per file to stdout, in the order given: the fields of a
/v2/predict answer with "file" in place of "request_id",
  {"file":"cat.jpg","model":{...},"detection":"detected","prediction":{...},"cat":{...},"image":{...}}
or, for a file that cannot be analysed, the v2 error code and message:
  {"file":"notes.txt","error":{"code":"invalid_image","message":"Image could not be decoded."}}
Error codes: invalid_image (not a decodable 8-bit image, empty, too many pixels), unreadable_file
(missing, a folder, no permission), internal_error. From ${PROGRESS_FROM} files on, a progress bar is
drawn on stderr when stderr is a terminal. With "-" as the only FILE the names are read from stdin,
one per line, or NUL-separated when the input holds a NUL (find ... -print0 | catcomfort predict -).

Options:
  --model ID        Model pack in CATCOMFORT_MODELS_DIR (default: CATCOMFORT_DEFAULT_MODEL, bc-v1)
  --threshold T     Discomfort threshold from 0 to 1 (default: the pack's default threshold)
  -h, --help        This text

Settings: the service's (CATCOMFORT_MODELS_DIR, CATCOMFORT_MAX_PIXELS, CATCOMFORT_EXECUTION_PROVIDERS,
CATCOMFORT_POOL_THREADS, CATCOMFORT_BATCH_*, ...; docs/configuration.md "Configuration").
Exit codes: 0 every file analysed, 1 at least one error line, the model could not be loaded or
stdout was closed early, 2 bad usage or configuration.
`;

type Line = Record<string, unknown> & { file: string };

function parseThreshold(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const value = raw.trim() === '' ? NaN : Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) throw new UsageError(`--threshold must be a number from 0 to 1, got "${raw}"`, USAGE);
  return value;
}

async function analyseFile(model: Model, file: string, threshold: number, version: string): Promise<{ line: Line; ok: boolean }> {
  let data: Buffer;
  try {
    data = await readFile(file);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return { line: { file, error: { code: 'unreadable_file', message: `Cannot read the file (${reason}).` } }, ok: false };
  }
  try {
    const analysis = await model.analyze({ data, encoding: 'bytes' });
    const { request_id: _requestId, ...result } = predictResponse({ serviceVersion: version }, predictedFigures(model, analysis, threshold), '');
    return { line: { file, ...result }, ok: true };
  } catch (error) {
    // Unknown failures are logged on stderr and become internal_error, as in the service.
    const { code, message } = toApiError(error, { file }) ?? { code: 'internal_error', message: (error as Error).message };
    return { line: { file, error: { code, message } }, ok: false };
  }
}

/**
 * Analyses `files` with up to `concurrency` in the pipeline at once and writes the lines in the
 * order of `files`. Returns the number of files that failed.
 */
async function analyseAll(model: Model, files: string[], threshold: number, concurrency: number): Promise<number> {
  const version = serviceVersion();
  const bar = process.stderr.isTTY && files.length >= PROGRESS_FROM ? new ProgressBar(files.length, process.stderr) : null;
  const results: Array<{ line: Line; ok: boolean } | undefined> = new Array(files.length);
  let next = 0;
  let written = 0;
  let failed = 0;
  const worker = async () => {
    while (next < files.length && process.stdout.writable) {
      const index = next++;
      const result = await analyseFile(model, files[index]!, threshold, version);
      results[index] = result;
      bar?.tick(result.ok);
      for (let r = results[written]; r !== undefined; r = results[written]) {
        process.stdout.write(JSON.stringify(r.line) + '\n');
        if (!r.ok) failed += 1;
        results[written] = undefined;
        written += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
  bar?.finish();
  return failed;
}

export async function predictCommand(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE, { model: { type: 'string' }, threshold: { type: 'string' } });
  if (!parsed) return 0;
  if (parsed.positionals.length === 0) throw new UsageError('at least one FILE is needed', USAGE);
  const model = parsed.values.model as string | undefined;
  const thresholdText = parsed.values.threshold as string | undefined;
  const threshold = parseThreshold(thresholdText);
  let files = parsed.positionals;
  if (files.includes('-')) {
    if (files.length > 1) throw new UsageError('"-" (names on stdin) must be the only FILE', USAGE);
    files = await readNames(process.stdin);
    if (files.length === 0) throw new UsageError('no file names on stdin', USAGE);
  } else if (commandLineBytes() > SAFE_COMMAND_LINE_BYTES) {
    // Too long for ONNX Runtime (src/cli/file-list.ts): the names go to a child's stdin.
    const options = [...(model === undefined ? [] : ['--model', model]), ...(thresholdText === undefined ? [] : ['--threshold', thresholdText])];
    return predictInChild(options, files);
  }
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`catcomfort predict: configuration error: ${error.message}\n`);
    return 2;
  }
  // stdout carries only result lines; the service's warnings still reach stderr.
  setLogLevel('warn');
  let loaded: Model;
  try {
    loaded = await loadOneModel(config, model ?? config.defaultModel);
  } catch (error) {
    if (!(error instanceof ModelChoiceError)) throw error;
    throw new UsageError(error.message, USAGE);
  }
  try {
    if (loaded.manifest.classifier.reference) {
      process.stderr.write(`note: the classifier of ${loaded.id} is an untrained reference network; its score is not a comfort signal\n`);
    }
    const { maxBatchSize, maxInFlight, maxQueue } = loaded.batcher.options;
    const failed = await analyseAll(loaded, files, appliedThreshold(loaded, threshold), Math.max(1, Math.min(maxBatchSize * maxInFlight, maxQueue)));
    return failed > 0 || !process.stdout.writable ? 1 : 0;
  } finally {
    await loaded.close();
  }
}
