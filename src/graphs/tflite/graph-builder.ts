// Collects the nodes and initializers of an ONNX graph under unique, deterministic names.
import type { OnnxAttribute, OnnxNode, OnnxTensor } from '../onnx/write';

export class GraphBuilder {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
  private readonly used = new Set<string>();
  private readonly shared = new Map<string, string>();

  /** Names taken by graph inputs. */
  constructor(reserved: readonly string[] = []) {
    for (const name of reserved) this.claim(name);
  }

  private claim(name: string): string {
    if (name === '' || this.used.has(name)) throw new Error(`ONNX value name "${name}" is empty or already used`);
    this.used.add(name);
    return name;
  }

  /** `base`, or `base_2`, `base_3`... when taken. */
  fresh(base: string): string {
    if (!this.used.has(base)) return this.claim(base);
    for (let i = 2; ; i++) if (!this.used.has(`${base}_${i}`)) return this.claim(`${base}_${i}`);
  }

  floatInitializer(base: string, dims: number[], data: Float32Array): string {
    const name = this.fresh(base);
    this.initializers.push({ name, dims, type: 'float32', data });
    return name;
  }

  int64Initializer(base: string, values: readonly number[]): string {
    const name = this.fresh(base);
    this.initializers.push({ name, dims: [values.length], type: 'int64', data: BigInt64Array.from(values, (v) => BigInt(v)) });
    return name;
  }

  /** A float32 scalar shared by every node that needs the same value (e.g. Clip bounds). */
  sharedScalar(value: number): string {
    const key = `f32:${value}`;
    let name = this.shared.get(key);
    if (name === undefined) {
      name = this.fresh(`const_${String(value).replace('-', 'minus').replace('.', 'p')}`);
      this.initializers.push({ name, dims: [], type: 'float32', data: Float32Array.of(value) });
      this.shared.set(key, name);
    }
    return name;
  }

  /** Appends a node with one output, named `output` when given (it must be free), else a fresh name. */
  node(opType: string, inputs: string[], attributes: OnnxAttribute[], output?: string): string {
    const out = output !== undefined ? this.claim(output) : this.fresh(`${opType.toLowerCase()}_out`);
    this.nodes.push({ name: `${opType}_${this.nodes.length}`, opType, inputs, outputs: [out], attributes });
    return out;
  }
}
