// The int8 backbone the CPU serves: the float copy (float-copy.ts) quantized again by our own
// quantizer (../quantize/qdq.ts, the detector's rule: 7-bit weights, which no CPU's int8 kernels can
// saturate). The zoo's file has full 8-bit weights, which change answers on x86 CPUs without VNNI.
// The activation ranges are the zoo file's own: each quantized tensor's scale and zero point give
// the range it holds, so no photos are needed and the same zoo file gives the same bytes everywhere.
// Per-channel DequantizeLinear needs opset 13, so the model moves from 12 to 13; of its ops only
// Unsqueeze changed there (its axes become an input).
import type { OnnxModel, OnnxNode, OnnxTensor } from '../onnx/write';
import { activationTensors, quantizeModel, type Ranges } from '../quantize/qdq';

const SUFFIX = '_quantized';

/** Where each op of the zoo's QLinear form keeps (tensor, scale, zero point) triples, by input index. */
const TRIPLES: Record<string, Array<[tensor: number | 'out', scale: number, zero: number]>> = {
  QuantizeLinear: [['out', 1, 2]],
  DequantizeLinear: [[0, 1, 2]],
  QLinearConv: [[0, 1, 2], ['out', 6, 7]],
  QLinearMatMul: [[0, 1, 2], ['out', 6, 7]],
  QLinearAdd: [[0, 1, 2], [3, 4, 5], ['out', 6, 7]],
  QLinearGlobalAveragePool: [[0, 1, 2], ['out', 3, 4]],
};

/** The float range of every quantized activation of the zoo model, by its float copy's name. */
export function zooRanges(int8: OnnxModel): Ranges {
  const constants = new Map(int8.graph.initializers.map((t) => [t.name, t]));
  const scalar = (node: OnnxNode, name: string, type: string): number => {
    const t = constants.get(name);
    if (t?.type !== type || t.data.length !== 1) throw new Error(`zooRanges: ${node.name}: ${name} is not a ${type} scalar`);
    return Number(t.data[0]);
  };
  const ranges: Ranges = {};
  for (const node of int8.graph.nodes) {
    for (const [at, s, z] of TRIPLES[node.opType] ?? []) {
      const tensor = at === 'out' ? node.outputs[0]! : node.inputs[at]!;
      if (constants.has(tensor)) continue;
      const scale = scalar(node, node.inputs[s]!, 'float32');
      const zero = scalar(node, node.inputs[z]!, 'uint8');
      const name = tensor.endsWith(SUFFIX) ? tensor.slice(0, -SUFFIX.length) : tensor;
      ranges[name] = [scale * (0 - zero), scale * (255 - zero)];
    }
  }
  return ranges;
}

/** `model` (opset 12) at opset 13: each Unsqueeze's `axes` attribute becomes an int64 input. */
function toOpset13(model: OnnxModel): OnnxModel {
  if (model.opsetVersion !== 12) throw new Error(`requantize: the float copy is at opset ${model.opsetVersion}, expected 12`);
  const axes: OnnxTensor[] = [];
  const nodes = model.graph.nodes.map((node): OnnxNode => {
    if (node.opType !== 'Unsqueeze') return node;
    const attribute = node.attributes.find((a) => a.name === 'axes');
    if (attribute?.type !== 'ints') throw new Error(`requantize: ${node.name}: Unsqueeze without axes`);
    const name = `${node.name}_axes`;
    axes.push({ name, dims: [attribute.value.length], type: 'int64', data: BigInt64Array.from(attribute.value, BigInt) });
    return { ...node, inputs: [...node.inputs, name], attributes: node.attributes.filter((a) => a !== attribute) };
  });
  return { ...model, opsetVersion: 13, graph: { ...model.graph, nodes, initializers: [...model.graph.initializers, ...axes] } };
}

/** The QDQ int8 backbone: `float` (the float copy of `int8`) quantized with `int8`'s own ranges. */
export function requantize(int8: OnnxModel, float: OnnxModel): OnnxModel {
  const all = zooRanges(int8);
  const ranges: Ranges = {};
  for (const name of activationTensors(float)) {
    const range = all[name];
    if (!range) throw new Error(`requantize: the zoo model holds no scale for ${name}`);
    ranges[name] = range;
  }
  const model = quantizeModel(toOpset13(float), { ranges, activationType: 'uint8', floatConvs: new Set() });
  return { ...model, producerName: 'catcomfort requantize', producerVersion: '1', docString: 'int8 (QDQ, 7-bit weights) of the float copy, with the int8 model\'s activation ranges' };
}
