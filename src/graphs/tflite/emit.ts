// ONNX emitters for the TFLite operators of the SSD graph. Feature maps are kept NCHW inside the
// ONNX graph (ONNX Conv's layout); shapes passed in and returned are TFLite's NHWC, all static.
//
// TFLite semantics followed (tensorflow/lite/kernels, the TF ops they mirror):
// - CONV_2D filter [O, KH, KW, I]; DEPTHWISE_CONV_2D filter [1, KH, KW, I * M], output channel
//   i * M + m reads input channel i (M = depth_multiplier);
// - padding SAME: output = ceil(in / stride), total padding
//   max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0), the odd pixel at the end (bottom/right);
//   VALID: no padding;
// - fused activation applied to the op's output: RELU = max(x, 0), RELU6 = min(max(x, 0), 6).
import { GraphBuilder } from './graph-builder';
import { Activation, Padding } from './schema';

export const NHWC_TO_NCHW = [0, 3, 1, 2];
export const NCHW_TO_NHWC = [0, 2, 3, 1];

export interface ConvParams {
  padding: Padding;
  strideH: number;
  strideW: number;
  dilationH: number;
  dilationW: number;
  activation: Activation;
}

export interface Filter {
  dims: number[];
  data: Float32Array;
}

export interface Emitted {
  name: string;
  /** NHWC shape of the result. */
  shape: number[];
}

/** [before, after] padding of one spatial axis. */
export function axisPads(size: number, kernel: number, stride: number, dilation: number, padding: Padding): [number, number] {
  if (padding === Padding.VALID) return [0, 0];
  if (padding !== Padding.SAME) throw new Error(`unsupported padding ${padding}`);
  const out = Math.ceil(size / stride);
  const total = Math.max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0);
  const before = Math.floor(total / 2);
  return [before, total - before];
}

function outputSize(size: number, kernel: number, stride: number, dilation: number, pads: [number, number]): number {
  return Math.floor((size + pads[0] + pads[1] - ((kernel - 1) * dilation + 1)) / stride) + 1;
}

/** TFLite CONV_2D filter [O, KH, KW, I] as ONNX Conv weights [O, I, KH, KW]. */
export function ohwiToOihw(filter: Filter): Filter {
  const [o, kh, kw, i] = filter.dims as [number, number, number, number];
  const out = new Float32Array(filter.data.length);
  for (let a = 0; a < o; a++)
    for (let y = 0; y < kh; y++)
      for (let x = 0; x < kw; x++)
        for (let c = 0; c < i; c++) out[((a * i + c) * kh + y) * kw + x] = filter.data[((a * kh + y) * kw + x) * i + c]!;
  return { dims: [o, i, kh, kw], data: out };
}

/** TFLite DEPTHWISE_CONV_2D filter [1, KH, KW, C] as ONNX grouped Conv weights [C, 1, KH, KW]. */
export function depthwiseToOihw(filter: Filter): Filter {
  const [one, kh, kw, c] = filter.dims as [number, number, number, number];
  if (one !== 1) throw new Error(`depthwise filter must have shape [1, KH, KW, C], got [${filter.dims.join(', ')}]`);
  const out = new Float32Array(filter.data.length);
  for (let y = 0; y < kh; y++)
    for (let x = 0; x < kw; x++)
      for (let k = 0; k < c; k++) out[(k * kh + y) * kw + x] = filter.data[(y * kw + x) * c + k]!;
  return { dims: [c, 1, kh, kw], data: out };
}

export function emitTranspose(g: GraphBuilder, x: string, perm: number[], output?: string): string {
  return g.node('Transpose', [x], [{ name: 'perm', type: 'ints', value: perm }], output);
}

/** The fused activation, if any, applied to x. */
export function emitActivation(g: GraphBuilder, x: string, activation: Activation, output?: string): string {
  switch (activation) {
    case Activation.NONE:
      if (output !== undefined) return g.node('Identity', [x], [], output);
      return x;
    case Activation.RELU:
      return g.node('Relu', [x], [], output);
    case Activation.RELU6:
      return g.node('Clip', [x, g.sharedScalar(0), g.sharedScalar(6)], [], output);
    default:
      throw new Error(`unsupported fused activation ${Activation[activation] ?? activation}`);
  }
}

function conv(
  g: GraphBuilder,
  x: string,
  inShape: number[],
  weights: Filter,
  bias: Float32Array | null,
  group: number,
  p: ConvParams,
  names: { weights: string; bias: string; output?: string },
): Emitted {
  const [n, h, w] = inShape as [number, number, number, number];
  const [o, , kh, kw] = weights.dims as [number, number, number, number];
  if (!(p.strideH >= 1 && p.strideW >= 1 && p.dilationH >= 1 && p.dilationW >= 1)) {
    throw new Error(`invalid strides/dilations ${p.strideH},${p.strideW},${p.dilationH},${p.dilationW}`);
  }
  const padH = axisPads(h, kh, p.strideH, p.dilationH, p.padding);
  const padW = axisPads(w, kw, p.strideW, p.dilationW, p.padding);
  const inputs = [x, g.floatInitializer(names.weights, weights.dims, weights.data)];
  if (bias) {
    if (bias.length !== o) throw new Error(`bias has ${bias.length} values for ${o} output channels`);
    inputs.push(g.floatInitializer(names.bias, [o], bias));
  }
  const activated = p.activation !== Activation.NONE;
  const y = g.node(
    'Conv',
    inputs,
    [
      { name: 'dilations', type: 'ints', value: [p.dilationH, p.dilationW] },
      { name: 'group', type: 'int', value: group },
      { name: 'kernel_shape', type: 'ints', value: [kh, kw] },
      { name: 'pads', type: 'ints', value: [padH[0], padW[0], padH[1], padW[1]] },
      { name: 'strides', type: 'ints', value: [p.strideH, p.strideW] },
    ],
    activated ? undefined : names.output,
  );
  const shape = [n, outputSize(h, kh, p.strideH, p.dilationH, padH), outputSize(w, kw, p.strideW, p.dilationW, padW), o];
  return { name: activated ? emitActivation(g, y, p.activation, names.output) : y, shape };
}

/** CONV_2D: x is NCHW, filter TFLite [O, KH, KW, I]. */
export function emitConv2d(
  g: GraphBuilder,
  x: string,
  inShape: number[],
  filter: Filter,
  bias: Float32Array | null,
  p: ConvParams,
  names: { weights: string; bias: string; output?: string },
): Emitted {
  const channels = inShape[3]!;
  if (filter.dims.length !== 4 || filter.dims[3] !== channels) {
    throw new Error(`conv filter [${filter.dims.join(', ')}] does not fit input channels ${channels}`);
  }
  return conv(g, x, inShape, ohwiToOihw(filter), bias, 1, p, names);
}

/** DEPTHWISE_CONV_2D: x is NCHW, filter TFLite [1, KH, KW, C * depthMultiplier]. */
export function emitDepthwiseConv2d(
  g: GraphBuilder,
  x: string,
  inShape: number[],
  filter: Filter,
  bias: Float32Array | null,
  p: ConvParams & { depthMultiplier: number },
  names: { weights: string; bias: string; output?: string },
): Emitted {
  const channels = inShape[3]!;
  if (filter.dims.length !== 4 || filter.dims[3] !== channels * p.depthMultiplier) {
    throw new Error(
      `depthwise filter [${filter.dims.join(', ')}] does not fit ${channels} channels x multiplier ${p.depthMultiplier}`,
    );
  }
  return conv(g, x, inShape, depthwiseToOihw(filter), bias, channels, p, names);
}

export function emitAdd(g: GraphBuilder, a: string, b: string, activation: Activation, output?: string): string {
  if (activation === Activation.NONE) return g.node('Add', [a, b], [], output);
  return emitActivation(g, g.node('Add', [a, b], []), activation, output);
}

export function emitConcat(g: GraphBuilder, inputs: string[], axis: number, activation: Activation, output?: string): string {
  const attrs = [{ name: 'axis', type: 'int' as const, value: axis }];
  if (activation === Activation.NONE) return g.node('Concat', inputs, attrs, output);
  return emitActivation(g, g.node('Concat', inputs, attrs), activation, output);
}

/** Reshape to `shape` (ONNX semantics: 0 copies the input's dim, -1 is inferred). */
export function emitReshape(g: GraphBuilder, x: string, shape: number[], shapeName: string, output?: string): string {
  return g.node('Reshape', [x, g.int64Initializer(shapeName, shape)], [], output);
}
