// One ONNX network for a crop: the ImageNet MobileNetV2 backbone (the ONNX Model Zoo's
// mobilenetv2-12-int8, or its float copy from float-copy.ts) with the comfort head on its pooled
// features. Input `input` float32 [N,3,224,224] (RGB 0..1, then ImageNet mean/std); outputs, in
// CROP_OUTPUTS order:
//   p_discomfort float32 [N,1]    Sigmoid(features . weights + bias)
//   probs        float32 [N,1000] Softmax over axis 1 of the backbone's logits `output`
//   features     float32 [N,1280] the pooled features, flattened
// The pooled features are found by structure: the output of the backbone's one global average
// pool. int8 form: QLinearGlobalAveragePool `464_quantized`, read through a DequantizeLinear with
// that node's output scale and zero point (`464_scale`, `464_zero_point`; SOURCE.md of the zoo
// file); it keeps the com.microsoft ops, which ONNX Runtime's CPU provider runs. float form:
// GlobalAveragePool `464`, and no QLinear, QuantizeLinear or DequantizeLinear op.
import { encodeModel, type OnnxModel, type OnnxNode, type OnnxTensor } from '../onnx/write';

export const CROP_OUTPUTS = ['p_discomfort', 'probs', 'features'] as const;

export type BackboneForm = 'int8' | 'float';

export interface CropHead {
  /** One weight per pooled feature. */
  weights: Float32Array | readonly number[];
  bias: number;
}

const POOL: Record<BackboneForm, string> = { int8: 'QLinearGlobalAveragePool', float: 'GlobalAveragePool' };
/** Which input of the convolution before the pool is its weight, whose dim 0 is the feature count. */
const CONV_WEIGHT: Record<string, number> = { QLinearConv: 3, Conv: 1 };
const QUANTIZED_OP = /^QLinear|^(De)?QuantizeLinear$/;

export function composeCropNetwork(backbone: OnnxModel, head: CropHead, form: BackboneForm): Buffer {
  const g = backbone.graph;
  const fail = (why: string): never => {
    throw new Error(`composeCropNetwork (${form} backbone ${g.name}): ${why}`);
  };
  const input = g.inputs.length === 1 ? g.inputs[0]! : fail(`${g.inputs.length} graph inputs, expected one`);
  const [n, ...chw] = input.dims ?? [];
  const batch =
    input.name === 'input' && typeof n === 'string' && chw.join() === '3,224,224'
      ? n
      : fail(`input ${input.name} [${input.dims?.join(', ')}] is not input [N, 3, 224, 224] with a symbolic N`);
  const logits = g.outputs.find((v) => v.name === 'output')?.dims?.[1];
  const classes = typeof logits === 'number' ? logits : fail('no output `output` of shape [N, classes]');
  if (form === 'float') {
    const q = g.nodes.find((x) => x.domain || QUANTIZED_OP.test(x.opType));
    if (q) fail(`node ${q.name} is ${q.domain ? `${q.domain}.` : ''}${q.opType}; the float form needs the float copy (floatCopy)`);
  }

  const pools = g.nodes.filter((x) => x.opType === POOL[form]);
  const pool = pools.length === 1 ? pools[0]! : fail(`${pools.length} ${POOL[form]} nodes, expected one`);
  const producer = (tensor: string): OnnxNode | undefined => g.nodes.find((x) => x.outputs.includes(tensor));
  let conv = producer(pool.inputs[0]!);
  while (conv?.opType === 'Clip') conv = producer(conv.inputs[0]!);
  const weight = conv && g.initializers.find((t) => t.name === conv.inputs[CONV_WEIGHT[conv.opType] ?? -1]);
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
  const pooled = pool.outputs[0]!;
  const nodes = [
    ...(form === 'int8' ? [node('DequantizeLinear', [pooled, pool.inputs[3]!, pool.inputs[4]!], 'pooled')] : []),
    node('Flatten', [form === 'int8' ? 'pooled' : pooled], 'features', [{ name: 'axis', type: 'int', value: 1 }]),
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
