// One recorded-answer case asked of a running service (answer-cases.ts): its answers as they came,
// with what may differ between two runs or two CPUs masked (ids, dates, timings, fractional numbers,
// box corners, timestamps, predicted classes, and so the lengths of bodies holding them), a long
// answer kept as its start and a digest, and whether the connection closed. The framing is checked before the masking: each answer's length is right.
import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import type { AnswerCase } from './answer-cases';
import { atLeast, normalized, responses, talk } from './raw-http';

export interface RecordedAnswer {
  text: string;
  /** sha256 of the whole masked text when it is longer than KEPT (text is then its start). */
  sha256?: string;
  closed: boolean;
}

const KEPT = 4096;

export async function askCase(port: number, c: AnswerCase): Promise<RecordedAnswer> {
  const reply = await talk(port, c.pieces, c.closes ? () => false : atLeast(c.answers ?? 1, c.bodiless), 30_000);
  const answers = responses(reply.text, c.bodiless);
  assert.equal(answers.map((a) => a.raw).join(''), reply.text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''), `${c.name}: every byte belongs to a whole answer`);
  const masked = normalized(reply.text)
    .replace(/(?<![\w/.])-?\d+\.\d+(?:e-?\d+)?/g, 'F')
    .replace(/"(x1|y1|x2|y2|x_min|y_min|x_max|y_max)":\d+/g, '"$1":N')
    .replace(/("name":"box","datatype":"FP32","shape":\[1,4\],"data":\[)[^\]]*/g, '$1B')
    .replace(/"\d+x\d+"/g, '"WxH"')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:[\dF.]+Z/g, 'TIME')
    .replace(/"label":"(?:comfort|discomfort)"|"prediction":"(?:Happy|Unhappy)"|"mood_class":[01]\b/g, 'CLASS')
    .replace(/^(Content-Length|Inference-Header-Content-Length): \d+$/gim, '$1: L');
  if (masked.length <= KEPT) return { text: masked, closed: reply.closed };
  return { text: masked.slice(0, KEPT), sha256: createHash('sha256').update(masked).digest('hex'), closed: reply.closed };
}
