// The infer answer's JSON header, written directly (src/oip/answer-json.ts), is the very text
// JSON.stringify writes for the same answer: strings that need escapes, numbers that JSON has no
// word for, an id or none, outputs asked as binary.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inferAnswerParts } from '../src/oip/answer-json';
import { joinBytesElements, rawNumbers } from '../src/oip/bytes-elements';
import type { InferAnswer } from '../src/oip/infer';
import type { OutputTensor } from '../src/oip/tensors';

/** What the answer's header was before: the object, through JSON.stringify. */
function stringified(answer: InferAnswer, binary: ReadonlySet<string>): string {
  const outputs = answer.outputs.map((o) =>
    binary.has(o.name)
      ? { name: o.name, datatype: o.datatype, shape: o.shape, parameters: { binary_data_size: bytesOf(o).length } }
      : { name: o.name, datatype: o.datatype, shape: o.shape, data: o.values },
  );
  return JSON.stringify({ model_name: answer.model, model_version: answer.version, ...(answer.id ? { id: answer.id } : {}), outputs });
}

const bytesOf = (o: OutputTensor) => (o.datatype === 'BYTES' ? joinBytesElements(o.values as string[]) : rawNumbers(o.datatype as 'FP32' | 'INT32', o.values as number[]));

const outputs: OutputTensor[] = [
  { name: 'detection', datatype: 'BYTES', shape: [2], values: ['detected', 'not_detected'] },
  { name: 'confidence', datatype: 'FP32', shape: [2], values: [0.9312345678, 0] },
  { name: 'box', datatype: 'FP32', shape: [2, 4], values: [12.5, 20.25, 300.125, 1e21, -0, 0, Number.NaN, Number.POSITIVE_INFINITY] },
  { name: 'score', datatype: 'FP32', shape: [2], values: [0.2123456789, -1] },
  { name: 'label', datatype: 'BYTES', shape: [2], values: ['comfort', ''] },
  { name: 'image_size', datatype: 'INT32', shape: [2, 2], values: [500, 375, 1, 2] },
];

test('the header is the text JSON.stringify writes, for every id and choice of binary outputs', () => {
  const ids = ['', 'plain', 'quote " backslash \\ newline \n tab \t', 'unicode é 猫 🐱', 'lone \ud800 surrogate', '\u0000\u001f\u007f'];
  const choices: Array<ReadonlySet<string>> = [new Set(), new Set(['box']), new Set(['detection', 'image_size']), new Set(outputs.map((o) => o.name))];
  for (const id of ids) {
    for (const binary of choices) {
      const answer: InferAnswer = { model: 'bc-v1 "x"', version: '1.0.0', id, outputs };
      const { json, tail } = inferAnswerParts(answer, binary);
      assert.equal(json, stringified(answer, binary), `id ${JSON.stringify(id)}, binary ${[...binary].join(',')}`);
      assert.deepEqual(tail, outputs.filter((o) => binary.has(o.name)).map(bytesOf));
    }
  }
});

test('no outputs: an empty list', () => {
  const answer: InferAnswer = { model: 'bc-v1', version: '2', id: '', outputs: [] };
  assert.equal(inferAnswerParts(answer, new Set()).json, '{"model_name":"bc-v1","model_version":"2","outputs":[]}');
});
