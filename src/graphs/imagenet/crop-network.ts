// One ONNX network for a crop: the ImageNet MobileNetV2 backbone (the float copy from float-copy.ts,
// or its 7-bit int8 QDQ form from requantize.ts) with the comfort head on its pooled features.
// Input `input` float32 [N,3,224,224] (RGB 0..1, then ImageNet mean/std); outputs, in
// CROP_OUTPUTS order:
//   p_discomfort float32 [N,1]    Sigmoid(features . weights + bias)
//   probs        float32 [N,1000] Softmax over axis 1 of the backbone's logits `output`
//   features     float32 [N,1280] the pooled features, flattened
// The pooled features are found by structure: the float output of the backbone's one
// GlobalAveragePool (`464`); QLinear ops (the zoo's own int8 form) are refused.
import { encodeModel, type OnnxModel, type OnnxNode, type OnnxTensor } from '../onnx/write';

export const CROP_OUTPUTS = ['p_discomfort', 'probs', 'features'] as const;

export interface CropHead {
  /** One weight per pooled feature. */
  weights: Float32Array | readonly number[];
  bias: number;
}

const POOL = 'GlobalAveragePool';

export function composeCropNetwork(backbone: OnnxModel, head: CropHead): Buffer {
  const g = backbone.graph;
  const fail = (why: string): never => {
    throw new Error(`composeCropNetwork (backbone ${g.name}): ${why}`);
  };
  const input = g.inputs.length === 1 ? g.inputs[0]! : fail(`${g.inputs.length} graph inputs, expected one`);
  const [n, ...chw] = input.dims ?? [];
  const batch =
    input.name === 'input' && typeof n === 'string' && chw.join() === '3,224,224'
      ? n
      : fail(`input ${input.name} [${input.dims?.join(', ')}] is not input [N, 3, 224, 224] with a symbolic N`);
  const logits = g.outputs.find((v) => v.name === 'output')?.dims?.[1];
  const classes = typeof logits === 'number' ? logits : fail('no output `output` of shape [N, classes]');
  const q = g.nodes.find((x) => x.domain || x.opType.startsWith('QLinear'));
  if (q) fail(`node ${q.name} is ${q.domain ? `${q.domain}.` : ''}${q.opType}; give the float copy (floatCopy) or its QDQ form (requantize)`);

  const pools = g.nodes.filter((x) => x.opType === POOL);
  const pool = pools.length === 1 ? pools[0]! : fail(`${pools.length} ${POOL} nodes, expected one`);
  const producer = (tensor: string): OnnxNode | undefined => g.nodes.find((x) => x.outputs.includes(tensor));
  let conv = producer(pool.inputs[0]!);
  while (conv?.opType === 'Clip' || conv?.opType === 'DequantizeLinear' || conv?.opType === 'QuantizeLinear') conv = producer(conv.inputs[0]!);
  const weightOf = (name: string | undefined) => {
    const dq = name === undefined ? undefined : producer(name);
    return g.initializers.find((t) => t.name === (dq?.opType === 'DequantizeLinear' ? dq.inputs[0] : name));
  };
  const weight = conv?.opType === 'Conv' ? weightOf(conv.inputs[1]) : undefined;
  const features = weight?.dims[0] ?? fail(`the input of ${pool.name} is not made by a convolution (and Clips) with a weight initializer`);
  if (head.weights.length !== features) fail(`the head has ${head.weights.length} weights for ${features} features`);

  const taken = new Set([input.name, ...g.initializers.map((t) => t.name), ...g.nodes.flatMap((x) => x.outputs)]);
  const tensor = (name: string): string => (taken.has(name) ? fail(`it already has a tensor named ${name}`) : name);
  const node = (opType: string, inputs: string[], output: string, attributes: OnnxNode['attributes'] = []): OnnxNode => ({
    name: `crop_${output}`,
    opType,
    inputs,
    outputs: [tensor(output)],
    attributes,
  });
  const nodes = [
    node('Flatten', [pool.outputs[0]!], 'features', [{ name: 'axis', type: 'int', value: 1 }]),
    node('Gemm', ['features', tensor('head_weights'), tensor('head_bias')], 'head_logit'),
    node('Sigmoid', ['head_logit'], 'p_discomfort'),
    node('Softmax', ['output'], 'probs', [{ name: 'axis', type: 'int', value: 1 }]),
  ];
  const headTensors: OnnxTensor[] = [
    { name: 'head_weights', dims: [features, 1], type: 'float32', data: Float32Array.from(head.weights) },
    { name: 'head_bias', dims: [1], type: 'float32', data: Float32Array.of(head.bias) },
  ];
  const dims: Record<(typeof CROP_OUTPUTS)[number], Array<number | string>> = {
    p_discomfort: [batch, 1],
    probs: [batch, classes],
    features: [batch, features],
  };
  return encodeModel({
    ...backbone,
    graph: {
      ...g,
      nodes: [...g.nodes, ...nodes],
      initializers: [...g.initializers, ...headTensors],
      outputs: CROP_OUTPUTS.map((name) => ({ name, dims: dims[name] })),
    },
  });
}
