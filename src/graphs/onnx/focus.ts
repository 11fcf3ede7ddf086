// In-memory rewrite of YOLOX's Focus block into operators every provider runs.
//
// Focus samples the input image at the four pixel phases and stacks them on the channel axis:
// eight Slice nodes (step 2 on rows, then on columns, offsets 0/1) feeding one Concat(axis 1).
// ONNX Runtime 1.29's CUDA plugin crashes on those Slices. SpaceToDepth(blocksize 2) makes the
// same four phases, in the order (0,0) (0,1) (1,0) (1,1), channel-minor; a Gather on axis 1 then
// puts the channels in the Concat's order. Both only move values, so outputs are bit-identical.
//
// The block is found by its structure, not by names: a Concat on axis 1 of four tensors, each a
// Slice of a Slice of the same rank-4 graph input with a known channel count, one on axis 2 and
// one on axis 3, step 2, start 0 or 1, end past the axis, the parameters INT64 initializers,
// together covering the four phases once, and the Slices' outputs used by nothing else. The Concat
// is replaced by SpaceToDepth + Gather writing the Concat's output; the Slices, the value_info of
// their outputs and the initializers only they used go (ONNX Runtime warns about unused ones;
// kept when a node has a subgraph, which may use them unseen). Field numbers as in batch.ts;
// NodeProto.domain = 7; AttributeProto.i = 3, g = 6, graphs = 11.
import { readTensor, readValueInfo } from './batch';
import { encodeNode, encodeTensor } from './write';
import { encodeLenField, firstLen, parseMessage, payload, rewrite, utf8, WT_LEN, WT_VARINT, type Field } from './protobuf';

interface GraphNode {
  /** Position among the graph's fields. */
  field: number;
  name: string;
  opType: string;
  domain: string;
  inputs: string[];
  outputs: string[];
  hasSubgraph: boolean;
  payload: Buffer;
}

interface FocusBlock {
  concat: GraphNode;
  slices: Set<GraphNode>;
  input: string;
  /** Gather indices: for each Concat input, the SpaceToDepth channels of its phase. */
  indices: bigint[];
}

/** A node's integer attribute `name`, or null. */
function intAttribute(node: GraphNode, name: string): bigint | null {
  for (const f of parseMessage(node.payload)) {
    if (f.no !== 5 || f.wt !== WT_LEN) continue;
    const attr = payload(node.payload, f);
    if (utf8(firstLen(attr, 1)) !== name) continue;
    const i = parseMessage(attr).find((x) => x.no === 3 && x.wt === WT_VARINT);
    return i ? BigInt.asIntN(64, i.varint) : null;
  }
  return null;
}

function readNode(buf: Buffer, field: number): GraphNode {
  const fields = parseMessage(buf);
  const strings = (no: number) => fields.filter((f) => f.no === no && f.wt === WT_LEN).map((f) => utf8(payload(buf, f)));
  return {
    field,
    name: strings(3)[0] ?? '',
    opType: strings(4)[0] ?? '',
    domain: strings(7)[0] ?? '',
    inputs: strings(1),
    outputs: strings(2),
    hasSubgraph: fields.some((f) => f.no === 5 && f.wt === WT_LEN && parseMessage(payload(buf, f)).some((a) => a.no === 6 || a.no === 11)),
    payload: buf,
  };
}

class Graph {
  readonly nodes: GraphNode[] = [];
  readonly producer = new Map<string, GraphNode>();
  readonly consumers = new Map<string, GraphNode[]>();
  /** One-element INT64 initializers, by name. */
  readonly scalars = new Map<string, bigint>();
  readonly initializers = new Set<string>();
  readonly inputDims = new Map<string, Array<number | string | null>>();
  readonly outputs = new Set<string>();
  readonly names = new Set<string>();

  constructor(readonly buf: Buffer) {
    parseMessage(buf).forEach((f, i) => {
      if (f.wt !== WT_LEN) return;
      const p = payload(buf, f);
      if (f.no === 1) {
        const node = readNode(p, i);
        this.nodes.push(node);
        this.names.add(node.name);
        for (const out of node.outputs) this.producer.set(out, node);
        for (const input of node.inputs) this.consumers.set(input, [...(this.consumers.get(input) ?? []), node]);
        for (const name of [...node.inputs, ...node.outputs]) this.names.add(name);
      } else if (f.no === 5) {
        const t = readTensor(p);
        this.initializers.add(t.name);
        this.names.add(t.name);
        if (t.int64?.length === 1) this.scalars.set(t.name, t.int64[0]!);
      } else if (f.no === 11) {
        const v = readValueInfo(p);
        this.inputDims.set(v.name, v.dims);
        this.names.add(v.name);
      } else if (f.no === 12) {
        this.outputs.add(utf8(firstLen(p, 1)));
      }
    });
  }

  uniqueName(base: string): string {
    let name = base;
    for (let i = 1; this.names.has(name); i++) name = `${base}_${i}`;
    this.names.add(name);
    return name;
  }
}

const isDefaultDomain = (node: GraphNode) => node.domain === '' || node.domain === 'ai.onnx';

/** A Slice taking every second row (axis 2) or column (axis 3) of `dims` from offset 0 or 1. */
function phaseSlice(graph: Graph, node: GraphNode | undefined, dims: Array<number | string | null>): { axis: number; start: number } | null {
  if (!node || node.opType !== 'Slice' || !isDefaultDomain(node) || node.inputs.length !== 5) return null;
  const [start, end, axisRaw, step] = node.inputs.slice(1).map((n) => graph.scalars.get(n));
  if (start === undefined || end === undefined || axisRaw === undefined || step === undefined) return null;
  const axis = Number(axisRaw < 0n ? axisRaw + 4n : axisRaw);
  if ((axis !== 2 && axis !== 3) || step !== 2n || (start !== 0n && start !== 1n)) return null;
  const size = dims[axis];
  if (end < (typeof size === 'number' ? BigInt(size) : 2n ** 31n - 1n)) return null;
  return { axis, start: Number(start) };
}

function findFocus(graph: Graph, concat: GraphNode): FocusBlock | null {
  if (concat.opType !== 'Concat' || !isDefaultDomain(concat) || concat.inputs.length !== 4) return null;
  const axis = intAttribute(concat, 'axis');
  if (axis !== 1n && axis !== -3n) return null;
  const first = graph.producer.get(concat.inputs[0]!);
  const input = first && graph.producer.get(first.inputs[0]!)?.inputs[0];
  const dims = input === undefined ? undefined : graph.inputDims.get(input);
  if (input === undefined || !dims || graph.initializers.has(input) || dims.length !== 4) return null;
  const channels = dims[1];
  if (typeof channels !== 'number' || channels < 1 || dims.slice(2).some((d) => typeof d === 'number' && d % 2 !== 0)) return null;

  const slices = new Set<GraphNode>();
  const phases: number[] = [];
  for (const tensor of concat.inputs) {
    const outer = graph.producer.get(tensor);
    const inner = outer && graph.producer.get(outer.inputs[0]!);
    const a = phaseSlice(graph, inner, dims);
    const b = phaseSlice(graph, outer, dims);
    if (!inner || !outer || !a || !b || a.axis === b.axis || inner.inputs[0] !== input) return null;
    const row = a.axis === 2 ? a.start : b.start;
    const column = a.axis === 3 ? a.start : b.start;
    phases.push(row * 2 + column);
    slices.add(inner).add(outer);
  }
  if (new Set(phases).size !== 4) return null;
  for (const slice of slices) {
    for (const out of slice.outputs) {
      if (graph.outputs.has(out)) return null;
      if ((graph.consumers.get(out) ?? []).some((n) => n !== concat && !slices.has(n))) return null;
    }
  }
  const indices = phases.flatMap((phase) => Array.from({ length: channels }, (_, c) => BigInt(phase * channels + c)));
  return { concat, slices, input, indices };
}

/**
 * Replaces every Focus block of a serialized ModelProto by SpaceToDepth + Gather (see the top of
 * this file). Returns the model unchanged, and 0, when it has none.
 */
export function withFocusAsSpaceToDepth(model: Buffer): { model: Buffer; rewritten: number } {
  const graphField = parseMessage(model).find((f) => f.no === 7 && f.wt === WT_LEN);
  if (!graphField) throw new Error('ONNX: model has no graph');
  const graph = new Graph(payload(model, graphField));
  const blocks = graph.nodes.map((n) => findFocus(graph, n)).filter((b): b is FocusBlock => b !== null);
  if (blocks.length === 0) return { model, rewritten: 0 };

  const slices = new Set(blocks.flatMap((b) => [...b.slices]));
  const removed = new Set([...slices].map((s) => s.field));
  const removedTensors = new Set([...slices].flatMap((s) => s.outputs));
  const unused = graph.nodes.some((n) => n.hasSubgraph)
    ? new Set<string>()
    : new Set(
        [...slices]
          .flatMap((s) => s.inputs)
          .filter((name) => graph.initializers.has(name) && !graph.outputs.has(name) && graph.consumers.get(name)!.every((n) => slices.has(n))),
      );
  const replacement = new Map<number, Buffer>();
  const newInitializers: Buffer[] = [];
  for (const block of blocks) {
    const base = block.concat.name || block.concat.outputs[0]!;
    const phases = graph.uniqueName(`${base}_space_to_depth`);
    const indices = graph.uniqueName(`${base}_phase_order`);
    const spaceToDepth = { name: phases, opType: 'SpaceToDepth', inputs: [block.input], outputs: [phases], attributes: [{ name: 'blocksize', type: 'int' as const, value: 2 }] };
    const gather = { name: graph.uniqueName(`${base}_gather`), opType: 'Gather', inputs: [phases, indices], outputs: block.concat.outputs, attributes: [{ name: 'axis', type: 'int' as const, value: 1 }] };
    replacement.set(block.concat.field, Buffer.concat([encodeLenField(1, encodeNode(spaceToDepth)), encodeLenField(1, encodeNode(gather))]));
    newInitializers.push(encodeLenField(5, encodeTensor({ name: indices, dims: [block.indices.length], type: 'int64', data: BigInt64Array.from(block.indices) })));
  }
  const keep = (f: Field): boolean => {
    if (f.wt !== WT_LEN) return true;
    const p = payload(graph.buf, f);
    if (f.no === 5) return !unused.has(readTensor(p).name);
    if (f.no === 11) return !unused.has(utf8(firstLen(p, 1)));
    if (f.no === 13) return !removedTensors.has(utf8(firstLen(p, 1)));
    return true;
  };
  let fieldIndex = 0;
  let initializersPlaced = false;
  let newGraph = rewrite(graph.buf, (f) => {
    const i = fieldIndex++;
    if (f.no === 1 && f.wt === WT_LEN) return removed.has(i) ? null : replacement.get(i);
    const kept = keep(f);
    if (f.no !== 5 || initializersPlaced) return kept ? undefined : null;
    initializersPlaced = true;
    return Buffer.concat([...newInitializers, kept ? graph.buf.subarray(f.start, f.end) : Buffer.alloc(0)]);
  });
  if (!initializersPlaced) newGraph = Buffer.concat([newGraph, ...newInitializers]);
  const out = rewrite(model, (f) => (f.no === 7 && f.wt === WT_LEN ? encodeLenField(7, newGraph) : undefined));
  return { model: out, rewritten: blocks.length };
}
