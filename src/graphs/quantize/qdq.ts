// Static QDQ quantization of a float ONNX model (the ONNX Runtime "QDQ" format): Conv weights
// become per-channel symmetric 7-bit initializers (int8 tensors, |w| <= WEIGHT_QMAX) behind DequantizeLinear (axis 0; a MatMul's 2-D
// weights per column, axis 1), Conv biases int32 at the input scale times the weight scale, and the
// activations these nodes read and write get a
// QuantizeLinear/DequantizeLinear pair with a uint8 scale and zero point from calibrated ranges.
// ONNX Runtime fuses DQ -> Conv -> Q into integer kernels (and drops a Relu/Clip whose range the Q
// already clamps to), so what is quantized is chosen here and how it runs is ORT's. Pure function
// of its inputs: the same model and ranges give the same bytes.
import type { OnnxModel, OnnxNode, OnnxTensor } from '../onnx/write';

/** Calibrated [min, max] of each activation tensor to quantize. */
export type Ranges = Record<string, [number, number]>;

/** Activations as uint8 (u8s8 kernels) or int8 (s8s8). */
export type ActivationType = 'uint8' | 'int8';

export interface QuantizeOptions {
  ranges: Ranges;
  activationType: ActivationType;
  /** Conv and MatMul nodes (by name) kept in float: their weights, input and output are left alone. */
  floatConvs: ReadonlySet<string>;
}

/**
 * Largest |weight| written: 7-bit weights (ONNX Runtime's "reduce range"). x86 CPUs without VNNI run
 * u8 x s8 products through an instruction that adds pairs into saturating 16-bit lanes; with
 * |w| <= 64, 255 x 64 x 2 = 32640 fits, so no CPU's kernel path can saturate and change an answer.
 */
export const WEIGHT_QMAX = 64;

/**
 * The channel axis of the weights of a node whose weights are quantized: 0 for a Conv ([O, ...]),
 * 1 for a MatMul by a 2-D float initializer ([K, N]); null for any other node.
 */
function weightAxis(node: OnnxNode, initializers: ReadonlyMap<string, OnnxTensor>): 0 | 1 | null {
  if (node.opType === 'Conv') return 0;
  const w = node.opType === 'MatMul' ? initializers.get(node.inputs[1]!) : undefined;
  return w?.type === 'float32' && w.dims.length === 2 ? 1 : null;
}

/** The activation tensors a QDQ model quantizes: each weighted node's input and its (activated) output. */
export function activationTensors(model: OnnxModel, floatConvs: ReadonlySet<string> = new Set()): string[] {
  const consumers = consumersOf(model.graph.nodes);
  const initializers = new Map(model.graph.initializers.map((t) => [t.name, t]));
  const out = new Set<string>();
  for (const node of model.graph.nodes) {
    if (weightAxis(node, initializers) === null || floatConvs.has(node.name)) continue;
    out.add(node.inputs[0]!);
    const y = node.outputs[0]!;
    const next = consumers.get(y) ?? [];
    const activation = next.length === 1 && (next[0]!.opType === 'Relu' || next[0]!.opType === 'Clip') ? next[0]! : null;
    out.add(activation ? activation.outputs[0]! : y);
  }
  return [...out].sort();
}

function consumersOf(nodes: OnnxNode[]): Map<string, OnnxNode[]> {
  const map = new Map<string, OnnxNode[]>();
  for (const node of nodes) for (const input of node.inputs) map.set(input, [...(map.get(input) ?? []), node]);
  return map;
}

/** Scale and zero point covering [min, max] (widened to hold 0, as zero padding must be exact). */
export function activationParams([min, max]: [number, number], type: ActivationType = 'uint8'): { scale: number; zeroPoint: number } {
  const lo = Math.min(0, min);
  const hi = Math.max(0, max, lo + 1e-6);
  const scale = Math.fround((hi - lo) / 255);
  const zeroPoint = Math.min(255, Math.max(0, Math.round(-lo / scale)));
  return { scale, zeroPoint: type === 'uint8' ? zeroPoint : zeroPoint - 128 };
}

/** Per-channel symmetric 7-bit weights (int8 tensors, |q| <= WEIGHT_QMAX) of a tensor of `dims`, channels on `axis`: values and scales. */
export function quantizeWeights(w: Float32Array, dims: readonly number[], axis: number): { q: Int8Array; scales: Float32Array } {
  const channels = dims[axis]!;
  const inner = dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  const channelOf = (i: number) => Math.floor(i / inner) % channels;
  const max = new Float32Array(channels);
  for (let i = 0; i < w.length; i++) max[channelOf(i)] = Math.max(max[channelOf(i)]!, Math.abs(w[i]!));
  const scales = max.map((m) => Math.fround(m > 0 ? m / WEIGHT_QMAX : 1));
  const q = Int8Array.from(w, (v, i) => Math.max(-WEIGHT_QMAX, Math.min(WEIGHT_QMAX, Math.round(v / scales[channelOf(i)]!))));
  return { q, scales };
}

class Builder {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
  constructor(
    private readonly floats: Map<string, OnnxTensor>,
    private readonly type: ActivationType,
  ) {}

  float(name: string): Float32Array {
    const t = this.floats.get(name);
    if (!t || t.type !== 'float32') throw new Error(`quantize: ${name} is not a float initializer`);
    return t.data;
  }

  add(tensor: OnnxTensor): string {
    this.initializers.push(tensor);
    return tensor.name;
  }

  node(opType: string, inputs: string[], output: string, axis?: number): void {
    const attributes = axis === undefined ? [] : [{ name: 'axis', type: 'int' as const, value: axis }];
    this.nodes.push({ name: output, opType, inputs, outputs: [output], attributes });
  }

  /** Q and DQ of an activation; returns the dequantized tensor's name. */
  activation(name: string, range: [number, number]): string {
    const { scale, zeroPoint } = activationParams(range, this.type);
    const s = this.add({ name: `${name}_scale`, dims: [], type: 'float32', data: Float32Array.of(scale) });
    const zero = `${name}_zero_point`;
    const z = this.add(this.type === 'uint8' ? { name: zero, dims: [], type: 'uint8', data: Uint8Array.of(zeroPoint) } : { name: zero, dims: [], type: 'int8', data: Int8Array.of(zeroPoint) });
    this.node('QuantizeLinear', [name, s, z], `${name}_quantized`);
    this.node('DequantizeLinear', [`${name}_quantized`, s, z], `${name}_dequantized`);
    return `${name}_dequantized`;
  }

  /** A node's weights (and a Conv's bias) as int8 (int32) behind DequantizeLinear; returns its new weight inputs. */
  weights(node: OnnxNode, axis: 0 | 1, inputScale: number): string[] {
    const [, wName, bName] = node.inputs as [string, string, string | undefined];
    const wTensor = this.floats.get(wName)!;
    const channels = wTensor.dims[axis]!;
    const { q, scales } = quantizeWeights(this.float(wName), wTensor.dims, axis);
    const ws = this.add({ name: `${wName}_scale`, dims: [channels], type: 'float32', data: scales });
    const wz = this.add({ name: `${wName}_zero_point`, dims: [channels], type: 'int8', data: new Int8Array(channels) });
    this.add({ name: `${wName}_quantized`, dims: wTensor.dims, type: 'int8', data: q });
    this.node('DequantizeLinear', [`${wName}_quantized`, ws, wz], `${wName}_dequantized`, axis);
    const inputs = [`${wName}_dequantized`];
    if (bName === undefined) return inputs;
    const bias = this.float(bName);
    const bScales = scales.map((s) => Math.fround(s * inputScale));
    const bq = Int32Array.from(bias, (b, o) => Math.round(b / bScales[o]!));
    const bs = this.add({ name: `${bName}_scale`, dims: [channels], type: 'float32', data: bScales });
    const bz = this.add({ name: `${bName}_zero_point`, dims: [channels], type: 'int32', data: new Int32Array(channels) });
    this.add({ name: `${bName}_quantized`, dims: [channels], type: 'int32', data: bq });
    this.node('DequantizeLinear', [`${bName}_quantized`, bs, bz], `${bName}_dequantized`, 0);
    return [...inputs, `${bName}_dequantized`];
  }
}

/** The QDQ model: `model`'s graph with the activations of activationTensors() and the weights of its Convs and MatMuls quantized. */
export function quantizeModel(model: OnnxModel, options: QuantizeOptions): OnnxModel {
  const graph = model.graph;
  const quantized = new Set(activationTensors(model, options.floatConvs));
  for (const name of quantized) if (!options.ranges[name]) throw new Error(`quantize: no calibrated range for ${name}`);
  const floats = new Map(graph.initializers.map((t) => [t.name, t]));
  const b = new Builder(floats, options.activationType);
  const dequantized = new Map<string, string>();
  const replaced = new Set<string>();
  const rewire = (inputs: string[]) => inputs.map((i) => dequantized.get(i) ?? i);
  const quantizeOutputs = (names: string[]) => {
    for (const name of names) if (quantized.has(name)) dequantized.set(name, b.activation(name, options.ranges[name]!));
  };
  quantizeOutputs(graph.inputs.map((v) => v.name));
  for (const node of graph.nodes) {
    let inputs = rewire(node.inputs);
    const axis = weightAxis(node, floats);
    if (axis !== null && !options.floatConvs.has(node.name)) {
      const x = node.inputs[0]!;
      inputs = [dequantized.get(x)!, ...b.weights(node, axis, activationParams(options.ranges[x]!, options.activationType).scale)];
      for (const name of node.inputs.slice(1)) replaced.add(name);
    }
    b.nodes.push({ ...node, inputs });
    quantizeOutputs(node.outputs);
  }
  const kept = graph.initializers.filter((t) => !replaced.has(t.name));
  return { ...model, graph: { ...graph, nodes: b.nodes, initializers: [...kept, ...b.initializers] } };
}
