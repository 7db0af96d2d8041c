// A forward step as a backend-neutral graph of named ops. Architectures build one; backends
// compile and execute it. Activation tensors have one row per token (or per requested output).
import { GgmlType } from '../gguf/ggml-type.js';

export enum Op {
  GetRows = 0,
  RmsNorm = 1,
  MulMat = 2,
  Add = 3,
  Rope = 4,
  Attention = 5,
  SwiGlu = 6,
  OutputRows = 7,
}

/** Rows of an activation: one per token of the step, or one per requested output. */
export const ROWS_PER_TOKEN = 0;
export const ROWS_PER_OUTPUT = -1;
/** dtype of the token-id input. */
export const TOKENS_DTYPE = -1;

export interface WeightData {
  buffer: ArrayBuffer;
  byteOffset: number;
  byteLength: number;
}

export interface GraphTensor {
  name: string;
  /** GgmlType of a constant, F32 for activations, TOKENS_DTYPE for the token ids. */
  dtype: number;
  /** Elements per row. */
  cols: number;
  /** Rows of a constant; ROWS_PER_TOKEN / ROWS_PER_OUTPUT (or a fixed count) for activations. */
  rows: number;
  data?: WeightData;
}

export interface GraphNode {
  op: Op;
  inputs: number[];
  output: number;
  params: number[];
}

export interface Graph {
  tensors: GraphTensor[];
  nodes: GraphNode[];
  output: number;
}

export interface RopeOptions {
  nHeads: number;
  headDim: number;
  nRot: number;
  neox: boolean;
  freqBase: number;
  freqScale: number;
  freqFactors?: number;
}

export interface AttentionOptions {
  layer: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  scale: number;
}

/** Builds a graph op by op; each op returns the id of the tensor it produces. */
export class GraphBuilder {
  private readonly tensors: GraphTensor[] = [];
  private readonly nodes: GraphNode[] = [];

  constant(name: string, dtype: GgmlType, cols: number, rows: number, data: WeightData): number {
    return this.push({ name, dtype, cols, rows, data });
  }

  tokens(): number {
    return this.push({ name: 'tokens', dtype: TOKENS_DTYPE, cols: 1, rows: ROWS_PER_TOKEN });
  }

  getRows(name: string, table: number, tokens: number): number {
    return this.op(Op.GetRows, name, [table, tokens], this.tensors[table]!.cols, ROWS_PER_TOKEN, []);
  }

  /** Normalizes each group of `groupWidth` values (the whole row by default). */
  rmsNorm(name: string, x: number, weight: number, eps: number, groupWidth?: number): number {
    const cols = this.tensors[x]!.cols;
    return this.op(Op.RmsNorm, name, [x, weight], cols, this.tensors[x]!.rows, [eps, groupWidth ?? cols]);
  }

  /** x (rows, w.cols) -> (rows, w.rows), plus an optional bias of w.rows. */
  mulMat(name: string, weight: number, x: number, bias?: number): number {
    const inputs = bias === undefined ? [weight, x] : [weight, x, bias];
    return this.op(Op.MulMat, name, inputs, this.tensors[weight]!.rows, this.tensors[x]!.rows, []);
  }

  add(name: string, a: number, b: number): number {
    return this.op(Op.Add, name, [a, b], this.tensors[a]!.cols, this.tensors[a]!.rows, []);
  }

  swiglu(name: string, gate: number, up: number): number {
    return this.op(Op.SwiGlu, name, [gate, up], this.tensors[gate]!.cols, this.tensors[gate]!.rows, []);
  }

  rope(name: string, x: number, o: RopeOptions): number {
    const inputs = o.freqFactors === undefined ? [x] : [x, o.freqFactors];
    const params = [o.nHeads, o.headDim, o.nRot, o.neox ? 1 : 0, o.freqBase, o.freqScale];
    return this.op(Op.Rope, name, inputs, this.tensors[x]!.cols, this.tensors[x]!.rows, params);
  }

  /** Stores k/v in the layer's cache, then causal GQA of q over the cache. */
  attention(name: string, q: number, k: number, v: number, o: AttentionOptions): number {
    const params = [o.layer, o.nHeads, o.nKvHeads, o.headDim, o.scale];
    return this.op(Op.Attention, name, [q, k, v], this.tensors[q]!.cols, this.tensors[q]!.rows, params);
  }

  /** Keeps only the rows whose outputs were requested (the last token, or all). */
  outputRows(name: string, x: number): number {
    return this.op(Op.OutputRows, name, [x], this.tensors[x]!.cols, ROWS_PER_OUTPUT, []);
  }

  build(output: number): Graph {
    return { tensors: this.tensors.slice(), nodes: this.nodes.slice(), output };
  }

  private push(t: GraphTensor): number {
    this.tensors.push(t);
    return this.tensors.length - 1;
  }

  private op(op: Op, name: string, inputs: number[], cols: number, rows: number, params: number[]): number {
    const output = this.push({ name, dtype: GgmlType.F32, cols, rows });
    this.nodes.push({ op, inputs, output, params });
    return output;
  }
}
