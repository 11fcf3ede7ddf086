// The trained classifier as one ONNX file: the backbone graph, then the head
// MatMul(embedding, W[C, 1]) + b -> Sigmoid, output p_discomfort [batch, 1] (outputIndex 0).
import type { OnnxGraph } from '../graphs/onnx/write';
import { BATCH_DIM, encodeOnnx } from '../graphs/tflite/convert';
import type { DetectorBackbone } from './backbone';
import type { LogisticHead } from './logistic';

export const SCORE_OUTPUT = 'p_discomfort';

export function composeClassifier(backbone: DetectorBackbone, head: LogisticHead, docString: string): Buffer {
  if (head.weights.length !== backbone.channels) {
    throw new Error(`the head has ${head.weights.length} weights for a ${backbone.channels}-channel backbone`);
  }
  const g = backbone.graph;
  const embedding = g.outputs[0]!.name;
  const graph: OnnxGraph = {
    name: g.name,
    nodes: [
      ...g.nodes,
      { name: 'head_matmul', opType: 'MatMul', inputs: [embedding, 'head_weights'], outputs: ['head_logit'], attributes: [] },
      { name: 'head_add', opType: 'Add', inputs: ['head_logit', 'head_bias'], outputs: ['head_logit_biased'], attributes: [] },
      { name: 'head_sigmoid', opType: 'Sigmoid', inputs: ['head_logit_biased'], outputs: [SCORE_OUTPUT], attributes: [] },
    ],
    initializers: [
      ...g.initializers,
      { name: 'head_weights', dims: [backbone.channels, 1], type: 'float32', data: Float32Array.from(head.weights) },
      { name: 'head_bias', dims: [1], type: 'float32', data: Float32Array.of(head.bias) },
    ],
    inputs: g.inputs,
    outputs: [{ name: SCORE_OUTPUT, dims: [BATCH_DIM, 1] }],
  };
  return encodeOnnx(graph, docString);
}
