// Checks a graph for the WebGPU backend and assigns activation buffers by liveness, as the CPU
// backend's native planner does (native/plan.cpp): everything this backend cannot run is refused
// here, before any GPU work, with the node and tensor named.
import { GGML_TYPES, GgmlType, ggmlTypeInfo, rowBytes } from '../../gguf/ggml-type.js';
import { type Graph, type GraphNode, type GraphTensor, Op, ROWS_PER_OUTPUT, ROWS_PER_TOKEN, TOKENS_DTYPE } from '../../model/graph.js';
import type { CompileOptions } from '../backend.js';
import { WGSL_TYPES } from './block-layouts.js';
import { WebGpuGraphError } from './errors.js';

/** The attention kernels keep a head's query in workgroup memory. */
export const MAX_HEAD_DIM = 256;
/** rms_norm sums squares in 16-bit limbs held in u32 lanes: at most 2^16 - 1 terms per lane. */
const MAX_NORM_WIDTH = 32768;

export interface GpuPlan {
  graph: Graph;
  /** Activation buffer of each tensor, -1 for constants and the token ids. */
  bufferOf: number[];
  /** Floats each activation buffer holds. */
  bufferFloats: number[];
  nLayers: number;
  /** Keys (and values) per cache row: kvHeads * headDim, the same in every layer. */
  kvWidth: number;
}

const OP_NAMES: Record<Op, string> = {
  [Op.GetRows]: 'get_rows',
  [Op.RmsNorm]: 'rms_norm',
  [Op.MulMat]: 'mul_mat',
  [Op.Add]: 'add',
  [Op.Rope]: 'rope',
  [Op.Attention]: 'attention',
  [Op.SwiGlu]: 'swiglu',
  [Op.OutputRows]: 'output_rows',
};

const PARAM_COUNT: Partial<Record<Op, number>> = { [Op.RmsNorm]: 2, [Op.Rope]: 6, [Op.Attention]: 5 };

const label = (t: GraphTensor, id: number) => (t.name ? `tensor '${t.name}'` : `tensor #${id}`);

export function planGraph(graph: Graph, options: CompileOptions): GpuPlan {
  const { tensors, nodes, output } = graph;
  const fail = (msg: string): never => {
    throw new WebGpuGraphError(`WebGPU backend: ${msg}`);
  };
  const int = (name: string, v: number, lo: number, hi: number) => {
    if (!Number.isInteger(v) || v < lo || v > hi) fail(`${name} must be an integer in [${lo}, ${hi}], got ${v}`);
  };
  int('slots', options.slots, 1, 256);
  int('contextSize', options.contextSize, 1, 1 << 22);
  int('maxBatch', options.maxBatch, 1, 1 << 16);
  if (options.kvCacheType !== 'f32' && options.kvCacheType !== 'f16') fail(`kvCacheType must be 'f32' or 'f16'`);
  if (!Number.isInteger(output) || output < 0 || output >= tensors.length) fail('the graph output is not a tensor of the graph');

  tensors.forEach((t, i) => {
    if (!Number.isInteger(t.cols) || t.cols < 1 || t.cols > 2 ** 32) fail(`${label(t, i)} has an invalid row width`);
    if (t.dtype === TOKENS_DTYPE) return;
    if (t.data) {
      const info = ggmlTypeInfo(t.dtype);
      if (!info) return fail(`${label(t, i)} has unknown type ${t.dtype}`);
      if (!Number.isInteger(t.rows) || t.rows < 1) fail(`${label(t, i)} is a constant without a row count`);
      if (t.cols % info.blockSize !== 0) fail(`${label(t, i)}: row width is not a multiple of the block size`);
      const need = rowBytes(t.dtype, t.cols) * t.rows;
      if (need !== t.data.byteLength) fail(`${label(t, i)} needs ${need} bytes but has ${t.data.byteLength}`);
    } else if (t.dtype !== GgmlType.F32) {
      fail(`${label(t, i)}: activations must be F32`);
    }
  });

  const produced = tensors.map((t) => t.data !== undefined || t.dtype === TOKENS_DTYPE);
  let maxLayer = -1;
  let kvWidth = 0;
  nodes.forEach((node, n) => {
    const where = `node ${n} (${OP_NAMES[node.op] ?? 'unknown'})`;
    if (!(node.op in OP_NAMES)) fail(`node ${n} has an unknown op`);
    if (node.params.length < (PARAM_COUNT[node.op] ?? 0)) fail(`${where} has too few parameters`);
    for (const input of node.inputs) {
      if (!Number.isInteger(input) || input < 0 || input >= tensors.length) fail(`${where} reads a tensor that does not exist`);
      if (!produced[input]) fail(`${where} reads ${label(tensors[input]!, input)} before it is computed`);
    }
    if (!Number.isInteger(node.output) || node.output < 0 || node.output >= tensors.length) fail(`${where} writes a tensor that does not exist`);
    const out = tensors[node.output]!;
    if (out.data || out.dtype === TOKENS_DTYPE) fail(`${where} writes into a constant`);
    if (produced[node.output]) fail(`${where} writes ${label(out, node.output)} a second time`);
    produced[node.output] = true;

    const need = (count: number) => {
      if (node.inputs.length < count) fail(`${where} has too few inputs`);
    };
    const act = (id: number): GraphTensor => {
      const t = tensors[id]!;
      if (t.dtype !== GgmlType.F32 || t.data) fail(`${where}: ${label(t, id)} must be an F32 activation`);
      return t;
    };
    const sameRows = (a: GraphTensor, b: GraphTensor) => {
      if (a.rows !== b.rows) fail(`${where}: inputs and output disagree on their row count`);
    };
    const vector = (id: number, values: number) => {
      const t = tensors[id]!;
      if (!t.data) fail(`${where}: ${label(t, id)} must be a constant`);
      if (t.rows * t.cols !== values) fail(`${where}: ${label(t, id)} must have ${values} values`);
    };

    switch (node.op) {
      case Op.GetRows: {
        need(2);
        const table = tensors[node.inputs[0]!]!;
        if (!table.data) fail(`${where}: the table must be a constant`);
        if (tensors[node.inputs[1]!]!.dtype !== TOKENS_DTYPE) fail(`${where}: the second input must be the token ids`);
        if (WGSL_TYPES[table.dtype as GgmlType] === undefined) fail(`${where}: ${label(table, node.inputs[0]!)} has type ${GGML_TYPES[table.dtype as GgmlType]?.name}, which the WebGPU backend cannot read`);
        if (out.cols !== table.cols || out.rows !== ROWS_PER_TOKEN) fail(`${where}: output must be (tokens, ${table.cols})`);
        break;
      }
      case Op.RmsNorm: {
        need(2);
        const x = act(node.inputs[0]!);
        const width = node.params[1]!;
        if (!Number.isInteger(width) || width < 1 || x.cols % width !== 0) fail(`${where}: group width must divide the row width`);
        if (width > MAX_NORM_WIDTH) fail(`${where}: group width ${width} is above the ${MAX_NORM_WIDTH} the exact WebGPU rms_norm sums`);
        if (!(node.params[0]! >= 0)) fail(`${where}: eps must be non-negative`);
        vector(node.inputs[1]!, width);
        if (out.cols !== x.cols) fail(`${where}: output width differs from input width`);
        sameRows(x, out);
        break;
      }
      case Op.MulMat: {
        need(2);
        const w = tensors[node.inputs[0]!]!;
        const x = act(node.inputs[1]!);
        if (!w.data) fail(`${where}: the weight must be a constant`);
        if (WGSL_TYPES[w.dtype as GgmlType] === undefined) fail(`${where}: ${label(w, node.inputs[0]!)} has a type the WebGPU backend cannot multiply`);
        if (x.cols !== w.cols) fail(`${where}: input width ${x.cols} does not match weight width ${w.cols}`);
        if (out.cols !== w.rows) fail(`${where}: output width must equal the weight's row count`);
        sameRows(x, out);
        if (node.inputs.length > 2) vector(node.inputs[2]!, w.rows);
        break;
      }
      case Op.Add:
      case Op.SwiGlu: {
        need(2);
        const a = act(node.inputs[0]!);
        const b = act(node.inputs[1]!);
        if (a.cols !== b.cols || a.cols !== out.cols) fail(`${where}: shapes differ`);
        sameRows(a, b);
        sameRows(a, out);
        break;
      }
      case Op.Rope: {
        need(1);
        const x = act(node.inputs[0]!);
        const [nHeads, headDim, nRot, , base, scale] = node.params as [number, number, number, number, number, number];
        if (!(nHeads >= 1 && headDim >= 1 && nHeads * headDim === x.cols)) fail(`${where}: heads * headDim must equal the row width`);
        if (!(nRot >= 2 && nRot <= headDim && nRot % 2 === 0)) fail(`${where}: rotated dimensions must be even and at most headDim`);
        if (!(base > 0) || !(scale > 0)) fail(`${where}: frequency base and scale must be positive`);
        if (node.inputs.length > 1) vector(node.inputs[1]!, nRot / 2);
        if (out.cols !== x.cols) fail(`${where}: output width differs from input width`);
        sameRows(x, out);
        break;
      }
      case Op.Attention: {
        need(3);
        const q = act(node.inputs[0]!);
        const k = act(node.inputs[1]!);
        const v = act(node.inputs[2]!);
        const [layer, nHeads, nKv, headDim] = node.params as [number, number, number, number];
        if (!Number.isInteger(layer) || layer < 0 || layer > 4096) fail(`${where}: bad layer index`);
        if (!(nHeads >= 1 && nKv >= 1 && nHeads % nKv === 0)) fail(`${where}: heads must be a multiple of KV heads`);
        if (!(headDim >= 1) || q.cols !== nHeads * headDim) fail(`${where}: query width must be heads * headDim`);
        if (headDim > MAX_HEAD_DIM) fail(`${where}: head dimension ${headDim} is above the ${MAX_HEAD_DIM} the WebGPU attention kernels hold`);
        const w = nKv * headDim;
        if (k.cols !== w || v.cols !== w) fail(`${where}: key/value width must be kvHeads * headDim`);
        if (kvWidth !== 0 && kvWidth !== w) fail(`${where}: every layer must have the same key/value width`);
        if (options.kvCacheType === 'f16' && w % 2 !== 0) fail(`${where}: an f16 KV cache needs an even key/value width`);
        kvWidth = w;
        sameRows(q, k);
        sameRows(q, v);
        sameRows(q, out);
        if (out.cols !== q.cols) fail(`${where}: output width must equal the query width`);
        maxLayer = Math.max(maxLayer, layer);
        break;
      }
      case Op.OutputRows: {
        need(1);
        const x = act(node.inputs[0]!);
        if (x.rows !== ROWS_PER_TOKEN || out.rows !== ROWS_PER_OUTPUT || out.cols !== x.cols) fail(`${where}: must map (tokens, n) to (outputs, n)`);
        break;
      }
    }
  });
  if (!produced[output] || tensors[output]!.data || tensors[output]!.dtype !== GgmlType.F32) fail('the graph output is never computed');

  const { bufferOf, bufferFloats } = assignBuffers(tensors, nodes, output, options.maxBatch);
  return { graph, bufferOf, bufferFloats, nLayers: maxLayer + 1, kvWidth };
}

/** Liveness: a buffer is free after its tensor's last reader; the best-fitting free one is reused. */
function assignBuffers(tensors: GraphTensor[], nodes: GraphNode[], output: number, maxBatch: number) {
  const lastUse = new Array<number>(tensors.length).fill(-1);
  nodes.forEach((node, n) => node.inputs.forEach((i) => (lastUse[i] = n)));
  lastUse[output] = nodes.length;
  const bufferOf = new Array<number>(tensors.length).fill(-1);
  const bufferFloats: number[] = [];
  const free: number[] = [];
  nodes.forEach((node, n) => {
    const out = tensors[node.output]!;
    const need = Math.max(out.rows, maxBatch) * out.cols;
    let best = -1;
    free.forEach((b, f) => {
      if (bufferFloats[b]! >= need && (best < 0 || bufferFloats[b]! < bufferFloats[free[best]!]!)) best = f;
    });
    if (best >= 0) {
      bufferOf[node.output] = free.splice(best, 1)[0]!;
    } else if (free.length > 0) {
      // Grow the largest free buffer rather than add one.
      let largest = 0;
      free.forEach((b, f) => {
        if (bufferFloats[b]! > bufferFloats[free[largest]!]!) largest = f;
      });
      const b = free.splice(largest, 1)[0]!;
      bufferFloats[b] = need;
      bufferOf[node.output] = b;
    } else {
      bufferOf[node.output] = bufferFloats.length;
      bufferFloats.push(need);
    }
    for (const i of node.inputs) {
      const b = bufferOf[i]!;
      if (lastUse[i] === n && b >= 0 && !tensors[i]!.data && !free.includes(b)) free.push(b);
    }
  });
  return { bufferOf, bufferFloats };
}
