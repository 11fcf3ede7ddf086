// The parts of the TFLite schema (tensorflow/lite/schema/schema.fbs, file identifier "TFL3") that
// the converter reads, as plain objects. Field indices are the fields' order in schema.fbs:
//   Model: version 0, operator_codes 1, subgraphs 2, description 3, buffers 4
//   OperatorCode: deprecated_builtin_code 0 (byte), custom_code 1, version 2, builtin_code 3 (int)
//   SubGraph: tensors 0, inputs 1, outputs 2, operators 3, name 4
//   Tensor: shape 0, type 1, buffer 2, name 3, quantization 4
//   Operator: opcode_index 0, inputs 1, outputs 2, builtin_options_type 3, builtin_options 4
//   Buffer: data 0, offset 1, size 2 (offset/size: data stored after the flatbuffer, from the
//   start of the file, for models over 2 GB)
import { rootTable, Table } from './flatbuffer';

/** TensorType values used here. */
export const TensorType = { FLOAT32: 0, FLOAT16: 1, INT32: 2, UINT8: 3, INT64: 4, INT8: 9 } as const;

const TENSOR_TYPE_NAMES: Record<number, string> = {
  0: 'FLOAT32', 1: 'FLOAT16', 2: 'INT32', 3: 'UINT8', 4: 'INT64', 5: 'STRING', 6: 'BOOL', 7: 'INT16',
  8: 'COMPLEX64', 9: 'INT8', 10: 'FLOAT64',
};

/** BuiltinOperator values the converter knows (ADD = 0 ... RESHAPE = 22). */
export const BuiltinOperator = {
  ADD: 0,
  CONCATENATION: 2,
  CONV_2D: 3,
  DEPTHWISE_CONV_2D: 4,
  DEQUANTIZE: 6,
  LOGISTIC: 14,
  RESHAPE: 22,
} as const;

const OPERATOR_NAMES: Record<number, string> = {
  0: 'ADD', 1: 'AVERAGE_POOL_2D', 2: 'CONCATENATION', 3: 'CONV_2D', 4: 'DEPTHWISE_CONV_2D',
  5: 'DEPTH_TO_SPACE', 6: 'DEQUANTIZE', 9: 'FULLY_CONNECTED', 14: 'LOGISTIC', 17: 'MAX_POOL_2D',
  18: 'MUL', 19: 'RELU', 21: 'RELU6', 22: 'RESHAPE', 23: 'RESIZE_BILINEAR', 25: 'SOFTMAX', 28: 'TANH',
  32: 'CUSTOM', 34: 'PAD', 39: 'TRANSPOSE', 40: 'MEAN', 41: 'SUB', 43: 'SQUEEZE', 45: 'STRIDED_SLICE',
  49: 'SPLIT', 53: 'CAST', 65: 'SLICE', 83: 'PACK',
};

/** BuiltinOptions union type values of the options tables read here. */
export const BuiltinOptionsType = {
  NONE: 0,
  Conv2DOptions: 1,
  DepthwiseConv2DOptions: 2,
  ConcatenationOptions: 10,
  AddOptions: 11,
  ReshapeOptions: 17,
  DequantizeOptions: 38,
} as const;

export enum Padding {
  SAME = 0,
  VALID = 1,
}

export enum Activation {
  NONE = 0,
  RELU = 1,
  RELU_N1_TO_1 = 2,
  RELU6 = 3,
  TANH = 4,
  SIGN_BIT = 5,
}

export function tensorTypeName(type: number): string {
  return TENSOR_TYPE_NAMES[type] ?? `type ${type}`;
}

export function operatorName(code: number): string {
  return OPERATOR_NAMES[code] ?? `BUILTIN_${code}`;
}

export interface TfliteTensor {
  index: number;
  name: string;
  shape: number[];
  type: number;
  /** Index into TfliteModel.buffers; 0 = no data (buffer 0 is always empty). */
  buffer: number;
}

export interface TfliteOperator {
  index: number;
  /** BuiltinOperator value (32 = CUSTOM). */
  builtinCode: number;
  opName: string;
  /** Tensor indices; -1 = optional input left out. */
  inputs: number[];
  outputs: number[];
  optionsType: number;
  options: Table | null;
}

export interface TfliteSubgraph {
  name: string;
  tensors: TfliteTensor[];
  inputs: number[];
  outputs: number[];
  operators: TfliteOperator[];
}

export interface TfliteModel {
  version: number;
  description: string;
  subgraphs: TfliteSubgraph[];
  /** Each buffer's bytes (views of the file, not copies); empty when it holds no data. */
  buffers: Buffer[];
}

function readOperatorCode(t: Table): number {
  // Readers take the larger of the two: old files only have the byte, new ones both (the byte
  // capped at 127 = PLACEHOLDER_FOR_GREATER_OP_CODES for newer operators).
  return Math.max(t.int8(0, 0), t.int32(3, 0));
}

function readBuffer(file: Buffer, t: Table, index: number): Buffer {
  const data = t.vectorBytes(0, 1);
  if (data && data.length > 0) return data;
  const offset = t.uint64(1, 0n);
  const size = t.uint64(2, 0n);
  if (offset > 1n) {
    if (offset + size > BigInt(file.length)) throw new Error(`TFLite buffer ${index} lies outside the file`);
    return file.subarray(Number(offset), Number(offset + size));
  }
  return Buffer.alloc(0);
}

/** Reads a .tflite file (in place: tensors' data are views of `file`). */
export function readTflite(file: Buffer): TfliteModel {
  const model = rootTable(file, 'TFL3');
  const codes = model.tableVector(1).map(readOperatorCode);
  const buffers = model.tableVector(4).map((t, i) => readBuffer(file, t, i));
  const subgraphs = model.tableVector(2).map((sg): TfliteSubgraph => {
    const tensors = sg.tableVector(0).map(
      (t, index): TfliteTensor => ({
        index,
        name: t.string(3) ?? '',
        shape: t.int32Vector(0),
        type: t.int8(1, 0),
        buffer: t.uint32(2, 0),
      }),
    );
    const operators = sg.tableVector(3).map((op, index): TfliteOperator => {
      const opcodeIndex = op.uint32(0, 0);
      const builtinCode = codes[opcodeIndex];
      if (builtinCode === undefined) throw new Error(`TFLite operator ${index}: opcode_index ${opcodeIndex} out of range`);
      return {
        index,
        builtinCode,
        opName: operatorName(builtinCode),
        inputs: op.int32Vector(1),
        outputs: op.int32Vector(2),
        optionsType: op.uint8(3, 0),
        options: op.table(4),
      };
    });
    const sub: TfliteSubgraph = { name: sg.string(4) ?? '', tensors, inputs: sg.int32Vector(1), outputs: sg.int32Vector(2), operators };
    for (const op of operators) {
      for (const i of [...op.inputs, ...op.outputs]) {
        if (i < -1 || i >= tensors.length) throw new Error(`TFLite operator ${op.index}: tensor index ${i} out of range`);
      }
    }
    for (const t of tensors) {
      if (t.buffer >= buffers.length) throw new Error(`TFLite tensor ${t.index}: buffer ${t.buffer} out of range`);
    }
    return sub;
  });
  return { version: model.uint32(0, 0), description: model.string(3) ?? '', subgraphs, buffers };
}

// ---- options tables (field indices in schema.fbs order) ----

export interface ConvOptions {
  padding: Padding;
  strideW: number;
  strideH: number;
  dilationW: number;
  dilationH: number;
  activation: Activation;
  /** Depthwise only (1 otherwise). */
  depthMultiplier: number;
}

function expectOptions(op: TfliteOperator, type: number, name: string): Table | null {
  if (op.optionsType !== type && op.optionsType !== BuiltinOptionsType.NONE) {
    throw new Error(`TFLite operator ${op.index} (${op.opName}): options of union type ${op.optionsType}, expected ${name}`);
  }
  return op.optionsType === type ? op.options : null;
}

/** Field numbers of a convolution's options table; no depthMultiplier field means 1. */
interface ConvFields {
  padding: number;
  strideW: number;
  strideH: number;
  depthMultiplier?: number;
  activation: number;
  dilationW: number;
  dilationH: number;
}

function convOptions(op: TfliteOperator, type: number, name: string, opName: string, f: ConvFields): ConvOptions {
  const t = expectOptions(op, type, name);
  if (!t) throw new Error(`TFLite operator ${op.index} (${opName}) has no ${name}`);
  return {
    padding: t.int8(f.padding, Padding.SAME),
    strideW: t.int32(f.strideW, 0),
    strideH: t.int32(f.strideH, 0),
    depthMultiplier: f.depthMultiplier === undefined ? 1 : t.int32(f.depthMultiplier, 0),
    activation: t.int8(f.activation, Activation.NONE),
    dilationW: t.int32(f.dilationW, 1),
    dilationH: t.int32(f.dilationH, 1),
  };
}

/** Conv2DOptions: padding 0, stride_w 1, stride_h 2, fused_activation_function 3, dilation_w_factor 4, dilation_h_factor 5. */
export function conv2dOptions(op: TfliteOperator): ConvOptions {
  return convOptions(op, BuiltinOptionsType.Conv2DOptions, 'Conv2DOptions', 'CONV_2D', { padding: 0, strideW: 1, strideH: 2, activation: 3, dilationW: 4, dilationH: 5 });
}

/**
 * DepthwiseConv2DOptions: padding 0, stride_w 1, stride_h 2, depth_multiplier 3,
 * fused_activation_function 4, dilation_w_factor 5, dilation_h_factor 6.
 */
export function depthwiseConv2dOptions(op: TfliteOperator): ConvOptions {
  return convOptions(op, BuiltinOptionsType.DepthwiseConv2DOptions, 'DepthwiseConv2DOptions', 'DEPTHWISE_CONV_2D', {
    padding: 0,
    strideW: 1,
    strideH: 2,
    depthMultiplier: 3,
    activation: 4,
    dilationW: 5,
    dilationH: 6,
  });
}

/** AddOptions: fused_activation_function 0. */
export function addOptions(op: TfliteOperator): { activation: Activation } {
  const t = expectOptions(op, BuiltinOptionsType.AddOptions, 'AddOptions');
  return { activation: t ? t.int8(0, Activation.NONE) : Activation.NONE };
}

/** ConcatenationOptions: axis 0, fused_activation_function 1. */
export function concatenationOptions(op: TfliteOperator): { axis: number; activation: Activation } {
  const t = expectOptions(op, BuiltinOptionsType.ConcatenationOptions, 'ConcatenationOptions');
  if (!t) throw new Error(`TFLite operator ${op.index} (CONCATENATION) has no ConcatenationOptions`);
  return { axis: t.int32(0, 0), activation: t.int8(1, Activation.NONE) };
}

/** ReshapeOptions: new_shape 0 (may be absent: the shape is then the second input). */
export function reshapeOptions(op: TfliteOperator): { newShape: number[] | null } {
  const t = expectOptions(op, BuiltinOptionsType.ReshapeOptions, 'ReshapeOptions');
  return { newShape: t && t.has(0) ? t.int32Vector(0) : null };
}
