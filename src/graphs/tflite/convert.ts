// TFLite -> ONNX conversion of float models made of the operators in emit.ts (the SSD MobileNetV2
// of @mediapipe/objectron: DEQUANTIZE of fp16 weights, CONV_2D, DEPTHWISE_CONV_2D, ADD, RESHAPE,
// CONCATENATION). Any other operator, or an unexpected shape or type, stops the conversion with
// an error naming it.
//
// Layout: TFLite tensors are NHWC. Rank-4 activations become NCHW as soon as a Conv needs them
// (one Transpose after the graph input) and stay NCHW through Conv/Add; a Reshape or Concatenation
// whose element order depends on the layout gets a Transpose back to NHWC first, so the flattened
// order is TFLite's. Weights are widened to float32 and re-laid out for ONNX Conv.
//
// Batch: the graph input and outputs get the symbolic dim "batch", and every Reshape copies the
// batch dim (0 in its shape), so any batch size runs.
//
// Backbone cut (convertTfliteBackbone): only the operators that a chosen intermediate tensor
// depends on, at a square input size of choice (shapes then computed, not the file's), followed
// by GlobalAveragePool + Flatten: one embedding row [batch, C] per image.
//
// The output depends only on the input bytes (and the cut's settings): same file, same ONNX bytes.
import { createHash } from 'node:crypto';
import { encodeModel, type OnnxGraph, type OnnxValueInfo } from '../onnx/write';
import { widenFloat16 } from './float16';
import { GraphBuilder } from './graph-builder';
import {
  emitAdd,
  emitConcat,
  emitConv2d,
  emitDepthwiseConv2d,
  emitReshape,
  emitTranspose,
  NCHW_TO_NHWC,
  NHWC_TO_NCHW,
} from './emit';
import {
  addOptions,
  BuiltinOperator,
  concatenationOptions,
  conv2dOptions,
  depthwiseConv2dOptions,
  readTflite,
  reshapeOptions,
  tensorTypeName,
  TensorType,
  type TfliteModel,
  type TfliteOperator,
  type TfliteSubgraph,
} from './schema';

export const ONNX_OPSET = 17;
export const ONNX_IR_VERSION = 8;
export const BATCH_DIM = 'batch';
const PRODUCER = 'catcomfort tflite-to-onnx';
const PRODUCER_VERSION = '1';

export interface ConversionResult {
  onnx: Buffer;
  /** TFLite operators of the graph, by name, with their counts (in first-use order). */
  tfliteOperators: Record<string, number>;
  /** ONNX node types emitted, with their counts (in first-use order). */
  onnxOperators: Record<string, number>;
}

/** A TFLite tensor's ONNX values: in its own layout (plain) and/or NCHW. */
interface Forms {
  plain?: string;
  nchw?: string;
}

function count(list: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of list) out[name] = (out[name] ?? 0) + 1;
  return out;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

class Converter {
  private readonly g: GraphBuilder;
  private readonly forms = new Map<number, Forms>();
  /** Constant float tensors: float32 buffers and DEQUANTIZE results. */
  private readonly floats = new Map<number, Float32Array>();
  private readonly outputs: Set<number>;
  /** Activation shapes computed at another input size (backbone cut); empty at the file's own size. */
  private readonly resized = new Map<number, number[]>();

  constructor(
    private readonly model: TfliteModel,
    private readonly sg: TfliteSubgraph,
    /** Square input side for a backbone cut; null: the file's own input shape. */
    private readonly inputSize: number | null = null,
  ) {
    this.outputs = new Set(sg.outputs);
    this.g = new GraphBuilder(sg.inputs.map((i) => this.tensor(i).name));
  }

  private tensor(index: number) {
    const t = this.sg.tensors[index];
    if (!t) throw new Error(`TFLite tensor ${index} does not exist`);
    return t;
  }

  /** The tensor's shape: computed at the cut's input size when resized, else as the file declares it. */
  private shapeOf(index: number): number[] {
    return this.resized.get(index) ?? this.tensor(index).shape;
  }

  /** Records a computed output shape (resized), or checks it against the file's. */
  private settle(op: TfliteOperator, index: number, computed: number[]): void {
    if (this.inputSize !== null) this.resized.set(index, computed);
    else this.checkShape(op, index, computed);
  }

  private data(index: number): Buffer {
    return this.model.buffers[this.tensor(index).buffer] ?? Buffer.alloc(0);
  }

  private isConstant(index: number): boolean {
    return this.floats.has(index) || this.data(index).length > 0;
  }

  private where(op: TfliteOperator): string {
    return `TFLite operator ${op.index} (${op.opName})`;
  }

  /** Name for the value holding tensor `index` in layout `layout`: the TFLite name for a graph output in its own layout. */
  private valueName(index: number, layout: 'plain' | 'nchw'): string | undefined {
    if (layout === 'plain' && this.outputs.has(index)) return this.tensor(index).name;
    return undefined;
  }

  private base(index: number, layout: 'plain' | 'nchw'): string {
    return layout === 'plain' ? `t${index}` : `t${index}_nchw`;
  }

  private set(index: number, layout: 'plain' | 'nchw', name: string): void {
    const f = this.forms.get(index) ?? {};
    f[layout] = name;
    this.forms.set(index, f);
  }

  /** Output name for the node producing tensor `index` in `layout` (each is produced once). */
  private out(index: number, layout: 'plain' | 'nchw'): string {
    return this.valueName(index, layout) ?? this.base(index, layout);
  }

  private activation(index: number, op: TfliteOperator): Forms {
    if (this.isConstant(index)) throw new Error(`${this.where(op)}: constant input ${index} where an activation is expected`);
    const f = this.forms.get(index);
    if (!f) throw new Error(`${this.where(op)}: input tensor ${index} is not produced before use`);
    return f;
  }

  /** Tensor `index` as NCHW (rank 4), transposing once from NHWC when needed. */
  private nchw(index: number, op: TfliteOperator): string {
    const f = this.activation(index, op);
    if (f.nchw) return f.nchw;
    if (this.shapeOf(index).length !== 4) throw new Error(`${this.where(op)}: tensor ${index} is not rank 4`);
    const name = emitTranspose(this.g, f.plain!, NHWC_TO_NCHW, this.out(index, 'nchw'));
    this.set(index, 'nchw', name);
    return name;
  }

  /** Tensor `index` in TFLite's own layout, transposing once from NCHW when needed. */
  private plain(index: number, op: TfliteOperator | null): string {
    const f = op ? this.activation(index, op) : this.forms.get(index);
    if (!f) throw new Error(`TFLite tensor ${index} is never produced`);
    if (f.plain) return f.plain;
    const name = emitTranspose(this.g, f.nchw!, NCHW_TO_NHWC, this.out(index, 'plain'));
    this.set(index, 'plain', name);
    return name;
  }

  private constantFloat(index: number, op: TfliteOperator): Float32Array {
    const known = this.floats.get(index);
    if (known) return known;
    const t = this.tensor(index);
    const bytes = this.data(index);
    if (t.type !== TensorType.FLOAT32 || bytes.length === 0) {
      throw new Error(`${this.where(op)}: input ${index} (${t.name}) is not a constant float tensor`);
    }
    // Copy: the file's bytes need not be 4-byte aligned.
    const values = new Float32Array(bytes.length / 4);
    for (let i = 0; i < values.length; i++) values[i] = bytes.readFloatLE(i * 4);
    this.floats.set(index, values);
    return values;
  }

  private constantInt32(index: number, op: TfliteOperator): number[] {
    const t = this.tensor(index);
    const bytes = this.data(index);
    if (t.type !== TensorType.INT32 || bytes.length === 0) throw new Error(`${this.where(op)}: input ${index} is not a constant int32 tensor`);
    const out: number[] = [];
    for (let i = 0; i < bytes.length; i += 4) out.push(bytes.readInt32LE(i));
    return out;
  }

  private checkShape(op: TfliteOperator, index: number, computed: number[]): void {
    const declared = this.tensor(index).shape;
    if (!sameShape(declared, computed)) {
      throw new Error(`${this.where(op)}: computed output shape [${computed}] differs from the model's [${declared}]`);
    }
  }

  private dequantize(op: TfliteOperator): void {
    const [input] = op.inputs as [number];
    const [output] = op.outputs as [number];
    const t = this.tensor(input);
    const bytes = this.data(input);
    if (t.type !== TensorType.FLOAT16 || bytes.length === 0) {
      throw new Error(`${this.where(op)}: only constant float16 inputs are supported, got ${tensorTypeName(t.type)}`);
    }
    if (this.tensor(output).type !== TensorType.FLOAT32) throw new Error(`${this.where(op)}: output is not float32`);
    this.floats.set(output, widenFloat16(bytes));
  }

  private convolution(op: TfliteOperator, depthwise: boolean): void {
    const [x, w, b = -1] = op.inputs as [number, number, number?];
    const [y] = op.outputs as [number];
    const inShape = this.shapeOf(x);
    const filter = { dims: this.tensor(w).shape, data: this.constantFloat(w, op) };
    const bias = b >= 0 ? this.constantFloat(b, op) : null;
    const names = { weights: `t${w}_oihw`, bias: `t${b}`, output: this.out(y, 'nchw') };
    const input = this.nchw(x, op);
    const emitted = depthwise
      ? emitDepthwiseConv2d(this.g, input, inShape, filter, bias, depthwiseConv2dOptions(op), names)
      : emitConv2d(this.g, input, inShape, filter, bias, conv2dOptions(op), names);
    this.settle(op, y, emitted.shape);
    this.set(y, 'nchw', emitted.name);
  }

  private add(op: TfliteOperator): void {
    const [a, b] = op.inputs as [number, number];
    const [y] = op.outputs as [number];
    const shape = this.shapeOf(a);
    if (!sameShape(this.shapeOf(b), shape)) throw new Error(`${this.where(op)}: broadcasting is not supported`);
    this.settle(op, y, shape);
    const { activation } = addOptions(op);
    if (shape.length === 4) {
      this.set(y, 'nchw', emitAdd(this.g, this.nchw(a, op), this.nchw(b, op), activation, this.out(y, 'nchw')));
    } else {
      this.set(y, 'plain', emitAdd(this.g, this.plain(a, op), this.plain(b, op), activation, this.out(y, 'plain')));
    }
  }

  private reshape(op: TfliteOperator): void {
    this.sameSizeOnly(op);
    const [x, shapeInput = -1] = op.inputs as [number, number?];
    const [y] = op.outputs as [number];
    const inShape = this.tensor(x).shape;
    const outShape = this.tensor(y).shape;
    const size = (s: number[]) => s.reduce((p, d) => p * d, 1);
    if (outShape.some((d) => d < 1) || size(inShape) !== size(outShape)) {
      throw new Error(`${this.where(op)}: [${inShape}] cannot become [${outShape}]`);
    }
    // The requested shape (ReshapeOptions or the shape input), -1 resolved, must be the declared one.
    const requested = reshapeOptions(op).newShape ?? (shapeInput >= 0 ? this.constantInt32(shapeInput, op) : null);
    if (requested) {
      const known = requested.filter((d) => d !== -1).reduce((p, d) => p * d, 1);
      const resolved = requested.map((d) => (d === -1 ? size(inShape) / known : d));
      if (!sameShape(resolved, outShape)) throw new Error(`${this.where(op)}: shape [${requested}] does not give [${outShape}]`);
    }
    if (inShape[0] !== 1 || outShape[0] !== 1) throw new Error(`${this.where(op)}: only reshapes that keep a batch of 1 are supported`);
    const target = [0, ...outShape.slice(1)];
    this.set(y, 'plain', emitReshape(this.g, this.plain(x, op), target, `t${y}_shape`, this.out(y, 'plain')));
  }

  private concatenation(op: TfliteOperator): void {
    this.sameSizeOnly(op);
    const [y] = op.outputs as [number];
    const rank = this.tensor(y).shape.length;
    const { axis: rawAxis, activation } = concatenationOptions(op);
    const axis = rawAxis < 0 ? rawAxis + rank : rawAxis;
    if (axis < 0 || axis >= rank) throw new Error(`${this.where(op)}: axis ${rawAxis} out of range`);
    const allNchw = rank === 4 && op.inputs.every((i) => this.activation(i, op).nchw !== undefined);
    if (allNchw) {
      const nchwAxis = NHWC_TO_NCHW.indexOf(axis);
      const inputs = op.inputs.map((i) => this.nchw(i, op));
      this.set(y, 'nchw', emitConcat(this.g, inputs, nchwAxis, activation, this.out(y, 'nchw')));
    } else {
      const inputs = op.inputs.map((i) => this.plain(i, op));
      this.set(y, 'plain', emitConcat(this.g, inputs, axis, activation, this.out(y, 'plain')));
    }
  }

  /** Reshape and Concatenation follow the file's shapes, so they convert at its own input size only. */
  private sameSizeOnly(op: TfliteOperator): void {
    if (this.inputSize !== null) throw new Error(`${this.where(op)}: not supported in a backbone cut at another input size`);
  }

  private takeInputs(): OnnxValueInfo[] {
    return this.sg.inputs.map((i) => {
      const t = this.tensor(i);
      if (t.type !== TensorType.FLOAT32 || t.shape[0] !== 1) throw new Error(`graph input ${t.name} must be float32 with batch 1`);
      if (this.inputSize !== null) {
        if (t.shape.length !== 4 || t.shape[3] !== 3) throw new Error(`graph input ${t.name} is not an NHWC RGB image`);
        this.resized.set(i, [1, this.inputSize, this.inputSize, 3]);
      }
      this.set(i, 'plain', t.name);
      return { name: t.name, dims: [BATCH_DIM, ...this.shapeOf(i).slice(1)] };
    });
  }

  private convertOperators(ops: readonly TfliteOperator[]): void {
    for (const op of ops) {
      if (op.outputs.length !== 1) throw new Error(`${this.where(op)}: ${op.outputs.length} outputs`);
      switch (op.builtinCode) {
        case BuiltinOperator.DEQUANTIZE:
          this.dequantize(op);
          break;
        case BuiltinOperator.CONV_2D:
          this.convolution(op, false);
          break;
        case BuiltinOperator.DEPTHWISE_CONV_2D:
          this.convolution(op, true);
          break;
        case BuiltinOperator.ADD:
          this.add(op);
          break;
        case BuiltinOperator.RESHAPE:
          this.reshape(op);
          break;
        case BuiltinOperator.CONCATENATION:
          this.concatenation(op);
          break;
        default:
          throw new Error(`${this.where(op)}: operator not supported by the converter`);
      }
    }
  }

  private graph(inputs: OnnxValueInfo[], outputs: OnnxValueInfo[]): OnnxGraph {
    const used = new Set(this.g.nodes.flatMap((n) => n.inputs));
    const unused = this.g.initializers.filter((t) => !used.has(t.name));
    if (unused.length > 0) throw new Error(`unused initializers: ${unused.map((t) => t.name).join(', ')}`);
    return { name: this.sg.name || 'main', nodes: this.g.nodes, initializers: this.g.initializers, inputs, outputs };
  }

  run(docString: string): ConversionResult {
    const inputs = this.takeInputs();
    this.convertOperators(this.sg.operators);
    const outputs = this.sg.outputs.map((i) => {
      const t = this.tensor(i);
      if (t.type !== TensorType.FLOAT32 || t.shape[0] !== 1) throw new Error(`graph output ${t.name} must be float32 with batch 1`);
      const name = this.plain(i, null);
      if (name !== t.name) throw new Error(`graph output ${t.name} is not produced by an operator`);
      return { name, dims: [BATCH_DIM, ...t.shape.slice(1)] };
    });
    const onnx = encodeOnnx(this.graph(inputs, outputs), docString);
    return {
      onnx,
      tfliteOperators: count(this.sg.operators.map((o) => o.opName)),
      onnxOperators: count(this.g.nodes.map((n) => n.opType)),
    };
  }

  /** The operators tensor `target` depends on, then its channel mean as output `output`: [batch, C]. */
  runBackbone(target: number, output: string): OnnxGraph {
    const producer = new Map(this.sg.operators.map((op) => [op.outputs[0]!, op]));
    const needed = new Set<TfliteOperator>();
    const pending = [target];
    while (pending.length > 0) {
      const op = producer.get(pending.pop()!);
      if (!op || needed.has(op)) continue;
      needed.add(op);
      pending.push(...op.inputs.filter((i) => i >= 0));
    }
    const inputs = this.takeInputs();
    this.convertOperators(this.sg.operators.filter((op) => needed.has(op)));
    const shape = this.shapeOf(target);
    const pooled = this.g.node('GlobalAveragePool', [this.nchw(target, producer.get(target)!)], []);
    const embedding = this.g.node('Flatten', [pooled], [{ name: 'axis', type: 'int', value: 1 }], output);
    return this.graph(inputs, [{ name: embedding, dims: [BATCH_DIM, shape[3]!] }]);
  }
}

/** A graph as a serialized ModelProto of this converter's opset and IR version. */
export function encodeOnnx(graph: OnnxGraph, docString: string): Buffer {
  return encodeModel({
    irVersion: ONNX_IR_VERSION,
    opsetVersion: ONNX_OPSET,
    producerName: PRODUCER,
    producerVersion: PRODUCER_VERSION,
    docString,
    graph,
  });
}

function firstSubgraph(model: TfliteModel): TfliteSubgraph {
  const sg = model.subgraphs[0];
  if (!sg) throw new Error('TFLite model has no subgraph');
  if (model.subgraphs.length > 1) throw new Error(`TFLite model has ${model.subgraphs.length} subgraphs; only one is supported`);
  return sg;
}

export interface BackboneCut {
  /** The tensor to stop at: the first `;`-separated part of its TFLite name. */
  tensor: string;
  /** Square input side in pixels. */
  inputSize: number;
  /** Name of the graph output. */
  output: string;
}

/**
 * The graph of a backbone cut of a .tflite file (see the top of this file): input as the file's
 * (NHWC) at cut.inputSize, output cut.output [batch, C].
 */
export function convertTfliteBackbone(tflite: Buffer, cut: BackboneCut): OnnxGraph {
  const model = readTflite(tflite);
  const sg = firstSubgraph(model);
  if (!Number.isInteger(cut.inputSize) || cut.inputSize < 32 || cut.inputSize > 1024) {
    throw new Error(`backbone input size must be an integer from 32 to 1024, got ${cut.inputSize}`);
  }
  const target = sg.tensors.findIndex((t) => t.name.split(';')[0] === cut.tensor);
  if (target < 0) throw new Error(`TFLite tensor "${cut.tensor}" does not exist`);
  return new Converter(model, sg, cut.inputSize).runBackbone(target, cut.output);
}

/** Converts a .tflite file (its first subgraph) to a serialized ONNX model. */
export function convertTfliteToOnnx(tflite: Buffer): ConversionResult {
  const model = readTflite(tflite);
  const sg = firstSubgraph(model);
  const source = createHash('sha256').update(tflite).digest('hex');
  return new Converter(model, sg).run(`Converted from TFLite (sha256 ${source}) by ${PRODUCER} ${PRODUCER_VERSION}`);
}
