// The float copy of an int8 ONNX model in the QLinear form of the ONNX Model Zoo's
// mobilenetv2-12-int8: the same network with its weights dequantized and its activations in
// float32, for providers without QLinear kernels (CUDA, TensorRT).
//
// Names: the float tensor of a quantized tensor `X_quantized` is `X` (the pooled features
// `464_quantized` become `464`, [N,1280,1,1]); other names are kept. A QuantizeLinear's or
// DequantizeLinear's output stands for the float tensor of its input (the zoo names them alike:
// `627`, `output`); graph outputs are renamed the same way.
// Ops: QLinearConv -> Conv, QLinearMatMul -> MatMul, com.microsoft QLinearAdd -> Add and
// QLinearGlobalAveragePool -> GlobalAveragePool, each followed by a Clip to the range its output's
// scale and zero point can hold (X_unclipped -> X: where the quantizer fused the ReLU6s, and the
// saturation of the int8 network); QuantizeLinear and DequantizeLinear dropped; the layout ops of
// LAYOUT_OPS kept. Any other op is refused, naming it.
// Constants: w = scale x (q - zero_point), per channel where the scale is a vector (axis 0 of a
// Conv weight, the last axis of a MatMul operand); int32 Conv biases b = q x input_scale x
// weight_scale. Initializers are written in the order the nodes first use them, so the same model
// gives the same copy.
import type { OnnxAttribute, OnnxModel, OnnxNode, OnnxTensor } from '../onnx/write';

const LAYOUT_OPS = new Set(['Shape', 'Gather', 'Unsqueeze', 'Squeeze', 'Concat', 'Reshape', 'Flatten', 'Transpose']);
const SUFFIX = '_quantized';

/** The float tensor's name of tensor `name`: `X_quantized` -> `X`, other names unchanged. */
function floatName(name: string): string {
  return name.endsWith(SUFFIX) ? name.slice(0, -SUFFIX.length) : name;
}

export function floatCopy(int8: OnnxModel): OnnxModel {
  const g = int8.graph;
  const source = new Map(g.initializers.map((t) => [t.name, t]));
  const initializers = new Map<string, OnnxTensor>();
  const stands = new Map<string, string>();
  const nodes: OnnxNode[] = [];
  let node: OnnxNode;
  const fail = (why: string): never => {
    throw new Error(`floatCopy: node ${node.name} (${node.opType}): ${why}`);
  };
  const constant = (name: string): OnnxTensor => source.get(name) ?? fail(`${name} is not an initializer`);
  const scalar = (name: string): number => {
    const t = constant(name);
    return t.data.length === 1 ? Number(t.data[0]) : fail(`${name} is not a scalar`);
  };
  const floats = (name: string): Float32Array => {
    const t = constant(name);
    return t.type === 'float32' ? t.data : fail(`${name} is ${t.type}, not float32`);
  };
  const add = (t: OnnxTensor): string => {
    initializers.set(t.name, t);
    return t.name;
  };

  /** The float tensor that activation `name` stands for (a plain initializer is copied). */
  const activation = (name: string): string => {
    const t = source.get(name);
    if (t === undefined) return stands.get(name) ?? floatName(name);
    return t.type === 'int8' || t.type === 'uint8' ? fail(`quantized initializer ${name} used without its scale`) : add(t);
  };

  /** Operand `q` in float: a quantized initializer dequantized (per channel along `axis`), or an activation. */
  const operand = (q: string, scale: string, zero: string, axis?: number): string => {
    const t = source.get(q);
    if (t === undefined) return activation(q);
    if (t.type !== 'int8' && t.type !== 'uint8') return fail(`${q} is ${t.type}, not int8 or uint8`);
    const [s, z] = [floats(scale), constant(zero).data];
    const channels = axis === undefined ? 1 : t.dims.at(axis);
    if (z.length !== s.length || (s.length !== 1 && s.length !== channels)) fail(`${scale} and ${zero} do not fit ${q} [${t.dims.join(', ')}]`);
    const inner = axis === undefined ? 1 : t.dims.slice(axis < 0 ? t.dims.length + axis + 1 : axis + 1).reduce((a, b) => a * b, 1);
    const data = Float32Array.from(t.data, (v, i) => {
      const c = Math.floor(i / inner) % s.length;
      return s[c]! * (v - Number(z[c]));
    });
    return add({ name: floatName(q), dims: [...t.dims], type: 'float32', data });
  };

  /** An int32 Conv bias in float: q x input_scale x weight_scale (per output channel). */
  const bias = (name: string, inputScale: string, weightScale: string): string => {
    const t = constant(name);
    const [xs, ws] = [scalar(inputScale), floats(weightScale)];
    if (t.type !== 'int32' || (ws.length !== 1 && ws.length !== t.data.length)) return fail(`${name} is not an int32 bias for ${weightScale}`);
    return add({ name: floatName(name), dims: [...t.dims], type: 'float32', data: Float32Array.from(t.data, (v, c) => v * xs * ws[ws.length === 1 ? 0 : c]!) });
  };

  /** A scalar float32 initializer. */
  const bound = (name: string, value: number): string => add({ name, dims: [], type: 'float32', data: Float32Array.of(value) });

  /** The float op of a QLinear op, then a Clip to the range of its output's scale and zero point. */
  const emit = (opType: string, inputs: string[], scale = '', zero = '', attributes: OnnxAttribute[] = []): void => {
    const y = floatName(node.outputs[0]!);
    const [s, z, type] = [scalar(scale), scalar(zero), constant(zero).type];
    const [min, max] = type === 'uint8' ? [0, 255] : type === 'int8' ? [-128, 127] : fail(`${zero} is ${type}, not int8 or uint8`);
    nodes.push({ name: node.name, opType, inputs, outputs: [`${y}_unclipped`], attributes });
    const range = [bound(`${y}_min`, s * (min - z)), bound(`${y}_max`, s * (max - z))];
    nodes.push({ name: `${node.name}_clip`, opType: 'Clip', inputs: [`${y}_unclipped`, ...range], outputs: [y], attributes: [] });
  };

  for (node of g.nodes) {
    const i = node.inputs;
    const op = node.domain ? `${node.domain}.${node.opType}` : node.opType;
    if (op === 'QuantizeLinear' || op === 'DequantizeLinear') stands.set(node.outputs[0]!, activation(i[0]!));
    else if (op === 'QLinearConv') {
      const inputs = [activation(i[0]!), operand(i[3]!, i[4]!, i[5]!, 0), ...(i[8] ? [bias(i[8], i[1]!, i[4]!)] : [])];
      emit('Conv', inputs, i[6], i[7], node.attributes);
    } else if (op === 'QLinearMatMul') emit('MatMul', [operand(i[0]!, i[1]!, i[2]!, -2), operand(i[3]!, i[4]!, i[5]!, -1)], i[6], i[7]);
    else if (op === 'com.microsoft.QLinearAdd') emit('Add', [operand(i[0]!, i[1]!, i[2]!), operand(i[3]!, i[4]!, i[5]!)], i[6], i[7]);
    else if (op === 'com.microsoft.QLinearGlobalAveragePool') {
      if (node.attributes.some((a) => a.name === 'channels_last' && a.value !== 0)) fail('channels_last is not supported');
      emit('GlobalAveragePool', [activation(i[0]!)], i[3], i[4]);
    } else if (LAYOUT_OPS.has(op)) nodes.push({ ...node, inputs: i.map(activation), outputs: node.outputs.map(floatName) });
    else fail(`op ${op} is not supported`);
  }

  const named = new Set<string>();
  for (const name of [...g.inputs.map((v) => v.name), ...initializers.keys(), ...nodes.flatMap((n) => n.outputs)]) {
    if (named.has(name)) throw new Error(`floatCopy: two float tensors are named ${name}`);
    named.add(name);
  }
  return {
    irVersion: int8.irVersion,
    opsetVersion: int8.opsetVersion,
    producerName: 'catcomfort float-copy',
    producerVersion: '1',
    docString: `float copy (weights dequantized) of an int8 model made by ${int8.producerName} ${int8.producerVersion}`,
    graph: {
      name: g.name,
      nodes,
      initializers: [...initializers.values()],
      inputs: g.inputs,
      outputs: g.outputs.map((v) => ({ ...v, name: stands.get(v.name) ?? floatName(v.name) })),
    },
  };
}
