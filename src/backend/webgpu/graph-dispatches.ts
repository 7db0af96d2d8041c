// Each node of a planned graph as the dispatches that compute it, in graph order, with the buffers
// they read and write: activation buffers by liveness, weights in their GGML blocks, the KV cache
// (one buffer pair per layer and slot, and per slot its rows in the step), activation scratch, RoPE
// angle tables.
/// <reference types="@webgpu/types" />
import { GgmlType } from '../../gguf/ggml-type.js';
import { type GraphTensor, Op, ROWS_PER_OUTPUT, ROWS_PER_TOKEN } from '../../model/graph.js';
import type { CompileOptions } from '../backend.js';
import type { Copy, DispatchSpec, Step } from './dispatch-table.js';
import type { AdapterSummary } from './gpu-device.js';
import { f16DotLanes } from './cpu-order.js';
import { align, f32Values, type GpuBuffers } from './gpu-buffers.js';
import { type GpuPlan, MAX_HEAD_DIM } from './plan.js';
import type { RopeAngles } from './rope-table.js';
import type { ShaderDefines } from './shader-source.js';

/** Steps with fewer tokens than this use the matrix-vector kernel; longer ones the tiled one. */
const MAT_VEC_MAX_TOKENS = 4;
/** Rows x tokens each invocation of the tiled mul_mat keeps (measured on lavapipe): eight lanes (or 16) per product take registers, Q4_0's one chain few. */
const tileOf = (type: GgmlType) => (type === GgmlType.Q4_0 || isFloat(type) ? { TR: 4, TT: 4 } : { TR: 2, TT: 4 });
/** Invocations per side of a tiled mul_mat workgroup (see the shader's SIDE). */
const MAT_SIDE = 8;
/** Workgroup size of the kernels that take one (see the shaders' WG). */
const WG = 64;

export interface KvCache {
  k: GPUBuffer;
  v: GPUBuffer;
}

export interface RopeBuffer {
  angles: RopeAngles;
  /** Host copy of the (cos, sin) table, rewritten each step. */
  table: Float32Array;
  buffer: GPUBuffer;
}

export interface GraphWork {
  items: Array<DispatchSpec | Copy>;
  /** Greedy sampling: the argmax of the last output row. */
  argmax: DispatchSpec;
  argmaxResult: GPUBuffer;
  tokens: GPUBuffer;
  positions: GPUBuffer;
  /** The buffer holding the graph's output rows, and how many a step has. */
  output: GPUBuffer;
  outputRows: (s: Step) => number;
  /** Index layer * slots + slot. */
  kv: KvCache[];
  /** Per slot: its rows in the step, (row0, n_rows) as u32 (include/segment.wgsl). */
  segments: GPUBuffer[];
  ropes: RopeBuffer[];
}

/** Activations prepared for a weight type's dot products. */
type ActClass = 'f32' | 'f16' | 'bf16' | 'q8_0' | 'q8_k';

function actClass(type: GgmlType): ActClass {
  switch (type) {
    case GgmlType.F32: return 'f32';
    case GgmlType.F16: return 'f16';
    case GgmlType.BF16: return 'bf16';
    case GgmlType.Q8_0:
    case GgmlType.Q4_0: return 'q8_0';
    default: return 'q8_k';
  }
}

const isFloat = (type: GgmlType) => type === GgmlType.F32 || type === GgmlType.F16 || type === GgmlType.BF16;

/** Rows of a tensor in a step. */
function rowsOf(t: GraphTensor): (s: Step) => number {
  if (t.rows === ROWS_PER_TOKEN) return (s) => s.nTokens;
  if (t.rows === ROWS_PER_OUTPUT) return (s) => s.nOutputs;
  return () => t.rows;
}

/** Widest matrix row, rounded up to a Q8_K block: the activation scratch holds maxBatch of them. */
export function maxMulMatCols(plan: GpuPlan): number {
  const { nodes, tensors } = plan.graph;
  return Math.max(256, ...nodes.filter((n) => n.op === Op.MulMat).map((n) => align(tensors[n.inputs[0]!]!.cols, 256)));
}

export function maxHeads(plan: GpuPlan): number {
  return Math.max(0, ...plan.graph.nodes.filter((n) => n.op === Op.Attention).map((n) => n.params[1]!));
}

export function graphWork(plan: GpuPlan, options: CompileOptions, buffers: GpuBuffers, features: AdapterSummary & { dot4: boolean; fusedFma: boolean }): GraphWork {
  const { tensors, nodes } = plan.graph;
  const tokens = buffers.storage('tokens', 4 * options.maxBatch);
  const positions = buffers.storage('positions', 4 * options.maxBatch);
  const acts = plan.bufferFloats.map((n, i) => buffers.storage(`activations ${i}`, 4 * n));
  const act = (id: number) => acts[plan.bufferOf[id]!]!;
  const rows = (id: number) => rowsOf(tensors[id]!);

  const segments = Array.from({ length: options.slots }, (_, slot) => buffers.storage(`segment ${slot}`, 16));
  const kvF16 = options.kvCacheType === 'f16';
  const kv: KvCache[] = [];
  for (let layer = 0; layer < plan.nLayers; layer++) {
    for (let slot = 0; slot < options.slots; slot++) {
      const bytes = options.contextSize * plan.kvWidth * (kvF16 ? 2 : 4);
      kv.push({ k: buffers.storage(`k cache ${layer}/${slot}`, bytes), v: buffers.storage(`v cache ${layer}/${slot}`, bytes) });
    }
  }
  const scores = buffers.storage('attention scores', 4 * Math.max(1, maxHeads(plan)) * options.contextSize);

  // Activations converted for the matrix kernels: one scratch per class, in words a float per
  // value (F16/BF16), or packed int8 values, then a scale and a sum per 32 values (which fit).
  const values = options.maxBatch * maxMulMatCols(plan);
  const aD = values / 4;
  const aS = aD + values / 32;
  const scratch = new Map<ActClass, GPUBuffer>();
  const scratchOf = (c: ActClass) => {
    if (!scratch.has(c)) scratch.set(c, buffers.storage(`${c} activations`, 4 * values));
    return scratch.get(c)!;
  };
  // Which tensor each scratch holds, in node order: q, k and v (or gate and up) share one conversion.
  const holds = new Map<ActClass, number>();

  const base: ShaderDefines = { WG, SUBGROUPS: false, SG_ONLY: false, F16: false, DOT4: features.dot4, FUSED_FMA: features.fusedFma };
  const reduce = { SUBGROUPS: features.subgroups };
  // mul_mat_vec gives the eight lanes of each product to eight invocations of one subgroup.
  const laneSplit = features.subgroups && features.subgroupMinSize >= 8;
  const matVecWg = Math.max(WG, features.subgroupMaxSize);
  const f16Lanes = f16DotLanes();
  const kvDefines = { KV_F16: kvF16, F16: kvF16 && features.f16, MAX_HEAD_DIM };
  const dispatch = (
    shader: string,
    defines: ShaderDefines,
    resources: Record<string, GPUBuffer> | Array<Record<string, GPUBuffer>>,
    params: DispatchSpec['params'],
    grid: DispatchSpec['grid'],
    when?: DispatchSpec['when'],
  ): DispatchSpec => ({
    kind: 'dispatch', shader, defines: { ...base, ...defines }, resources: Array.isArray(resources) ? resources : [resources],
    perSlot: Array.isArray(resources), params, grid, ...(when ? { when } : {}),
  });
  const perElement = (n: (s: Step) => number) => (s: Step) => Math.ceil(n(s) / WG);

  const ropes = new Map<string, RopeBuffer>();
  const items: Array<DispatchSpec | Copy> = [];
  for (const node of nodes) {
    const out = tensors[node.output]!;
    const y = act(node.output);
    const outValues = (s: Step) => rows(node.output)(s) * out.cols;
    switch (node.op) {
      case Op.GetRows: {
        const table = buffers.weight(tensors[node.inputs[0]!]!);
        // Each binding of a split table looks up the ids in its rows.
        for (const c of table.chunks) {
          items.push(dispatch('get_rows', { DTYPE: table.tensor.dtype }, { w: c.buffer, ids: tokens, y },
            (s) => ({ cols: out.cols, row_bytes: table.rowBytes, n_tokens: s.nTokens, first_row: c.firstRow, rows: c.rows }), perElement(outValues)));
        }
        break;
      }
      case Op.RmsNorm: {
        const width = node.params[1]!;
        items.push(dispatch('rms_norm', reduce, { x: act(node.inputs[0]!), weight: buffers.vector(tensors[node.inputs[1]!]!), y },
          (s) => ({ width, n_groups: outValues(s) / width, eps: node.params[0]! }), (s) => outValues(s) / width));
        break;
      }
      case Op.MulMat: {
        const w = buffers.weight(tensors[node.inputs[0]!]!);
        const x = node.inputs[1]!;
        const type = w.tensor.dtype as GgmlType;
        const cols = w.tensor.cols;
        const xRows = rows(x);
        const cls = actClass(type);
        if (cls !== 'f32' && holds.get(cls) !== x) {
          holds.set(cls, x);
          if (cls === 'f16' || cls === 'bf16') {
            items.push(dispatch('round_half', { BF16: cls === 'bf16' }, { x: act(x), a: scratchOf(cls) }, (s) => ({ n: xRows(s) * cols }), perElement((s) => xRows(s) * cols)));
          } else {
            const block = cls === 'q8_0' ? 32 : 256;
            items.push(dispatch(`quantize_${cls}`, {}, { x: act(x), a: scratchOf(cls) },
              (s) => ({ cols, n_blocks: (xRows(s) * cols) / block, a_d: aD, a_s: aS }), perElement((s) => (xRows(s) * cols) / block)));
          }
        }
        const a = cls === 'f32' ? act(x) : scratchOf(cls);
        // With shader-f16, F16 rows are read 8 bytes at a time, which needs rows of whole vec4s.
        const f16 = type === GgmlType.F16 && features.f16 && cols % 4 === 0;
        const defines = { DTYPE: type, IS_FLOAT: isFloat(type), F16: f16, FLOAT_LANES: type === GgmlType.F16 ? f16Lanes : 8 };
        const tile = tileOf(type);
        const vector = (s: Step) => laneSplit && xRows(s) < MAT_VEC_MAX_TOKENS;
        for (const c of w.chunks) {
          const resources = { w: c.buffer, a, y, ...(f16 ? { wh: c.buffer } : {}) };
          const params = (s: Step) => ({
            cols, rows: c.rows, row_bytes: w.rowBytes, n_tokens: xRows(s), units: cols / 32, a_d: aD, a_s: aS, out_cols: w.tensor.rows, out_offset: c.firstRow, zero: 0,
          });
          if (laneSplit) {
            items.push(dispatch('mul_mat_vec', { ...defines, SUBGROUPS: true, WG: matVecWg }, resources, params,
              (s) => Math.ceil((c.rows * xRows(s)) / (matVecWg / 8)), vector));
          }
          items.push(dispatch('mul_mat', { ...defines, ...tile }, resources, params,
            (s) => [Math.ceil(c.rows / (MAT_SIDE * tile.TR)), Math.ceil(xRows(s) / (MAT_SIDE * tile.TT))], (s) => !vector(s)));
        }
        if (node.inputs.length > 2) {
          items.push(dispatch('add_bias', {}, { bias: buffers.vector(tensors[node.inputs[2]!]!), y }, (s) => ({ cols: out.cols, n: outValues(s) }), perElement(outValues)));
        }
        break;
      }
      case Op.Add:
        items.push(dispatch('add', {}, { a: act(node.inputs[0]!), b: act(node.inputs[1]!), y }, (s) => ({ n: outValues(s) }), perElement(outValues)));
        break;
      case Op.SwiGlu:
        items.push(dispatch('swiglu', {}, { gate: act(node.inputs[0]!), up: act(node.inputs[1]!), y }, (s) => ({ n: outValues(s), zero: 0 }), perElement(outValues)));
        break;
      case Op.Rope: {
        const [nHeads, headDim, nRot, neox, freqBase, freqScale] = node.params as [number, number, number, number, number, number];
        const ff = node.inputs.length > 1 ? node.inputs[1]! : undefined;
        // Layers share their angles: one table per distinct set of rope parameters.
        const key = `${nRot}/${freqBase}/${freqScale}/${ff ?? ''}`;
        if (!ropes.has(key)) {
          const table = new Float32Array(options.maxBatch * nRot);
          const angles: RopeAngles = { nRot, freqBase, freqScale, ...(ff !== undefined ? { freqFactors: f32Values(tensors[ff]!) } : {}) };
          ropes.set(key, { angles, table, buffer: buffers.storage(`rope ${key}`, table.byteLength) });
        }
        items.push(dispatch('rope', {}, { x: act(node.inputs[0]!), cs: ropes.get(key)!.buffer, y },
          (s) => ({ n_heads: nHeads, head_dim: headDim, n_rot: nRot, neox, n: outValues(s), zero: 0 }), perElement(outValues)));
        break;
      }
      case Op.Attention: {
        const [layer, nHeads, nKv, headDim, scale] = node.params as [number, number, number, number, number];
        const [q, k, v] = node.inputs.map(act) as [GPUBuffer, GPUBuffer, GPUBuffer];
        // Per slot segment of the step (grid and condition see the segment's rows): its cache and rows.
        const caches = kv.slice(layer * options.slots, (layer + 1) * options.slots).map((c, slot) => ({ kc: c.k, vc: c.v, seg: segments[slot]! }));
        const geometry = { n_heads: nHeads, n_kv_heads: nKv, head_dim: headDim };
        const decode = (s: Step) => s.nTokens === 1;
        const kvWords = kvF16 ? plan.kvWidth / 2 : plan.kvWidth;
        items.push(
          dispatch('kv_store', { KV_F16: kvF16 }, caches.map((c) => ({ k, v, positions, ...c })),
            () => ({ kv_width: plan.kvWidth, zero: 0 }), (s) => Math.ceil((s.nTokens * kvWords) / WG)),
          // One row (a decode token): scores for every cache row in parallel, a softmax per head, then the values.
          dispatch('attention_scores', kvDefines, caches.map((c) => ({ q, positions, scores, ...c })),
            () => ({ ...geometry, ctx: options.contextSize, scale, zero: 0 }), (s) => Math.ceil((nHeads * s.kvLength) / WG), decode),
          dispatch('softmax', reduce, caches.map((c) => ({ positions, x: scores, seg: c.seg })),
            () => ({ n_rows: nHeads, stride: options.contextSize, zero: 0 }), () => nHeads, decode),
          dispatch('attention_values', kvDefines, caches.map((c) => ({ probs: scores, positions, y, ...c })),
            () => ({ ...geometry, ctx: options.contextSize, zero: 0 }), () => Math.ceil((nHeads * headDim) / WG), decode),
          // Several rows (a prefill chunk): a workgroup per (row, head).
          dispatch('attention', { ...kvDefines, ...reduce }, caches.map((c) => ({ q, positions, y, ...c })),
            () => ({ ...geometry, scale, zero: 0 }), (s) => s.nTokens * nHeads, (s) => !decode(s)),
        );
        break;
      }
      case Op.OutputRows:
        items.push({ kind: 'copy', src: act(node.inputs[0]!), dst: y, cols: out.cols });
        break;
    }
  }

  const output = act(plan.graph.output);
  const outputRows = rows(plan.graph.output);
  const width = tensors[plan.graph.output]!.cols;
  const argmaxResult = buffers.storage('argmax', 4);
  const argmax = dispatch('argmax', { ...reduce, WG: 256 }, { x: output, result: argmaxResult },
    (s) => ({ n: width, offset: (outputRows(s) - 1) * width, neg_inf: -Infinity }), () => 1);
  return { items, argmax, argmaxResult, tokens, positions, output, outputRows, kv, segments, ropes: [...ropes.values()] };
}
