// A planned graph on a WebGPU device: weights uploaded once in their GGML blocks, activation
// buffers assigned by liveness, one KV cache buffer pair per (layer, slot), every dispatch's bind
// group made at load. A forward step writes the token ids, positions and RoPE angles, records the
// whole step into one command encoder, and reads back only the output rows (or the argmax index).
/// <reference types="@webgpu/types" />
import { GgmlType, rowBytes } from '../../gguf/ggml-type.js';
import { type GraphNode, type GraphTensor, Op, ROWS_PER_OUTPUT, ROWS_PER_TOKEN } from '../../model/graph.js';
import { dequantize } from '../../reference/quantize.js';
import { InvalidArgumentError } from '../../errors.js';
import type { CompileOptions, CompiledGraph } from '../backend.js';
import { WebGpuLimitError } from './errors.js';
import { type GpuContext, openDevice } from './gpu-device.js';
import { type Kernel, KernelCache } from './kernels.js';
import { type GpuPlan, MAX_HEAD_DIM } from './plan.js';
import { type RopeAngles, ropeTable } from './rope-table.js';
import type { ShaderDefines } from './shader-source.js';

export interface WebGpuTuning {
  /** Largest weight binding in bytes; larger tensors are split by rows. Default: the adapter's limit. */
  maxBindingBytes?: number;
}

/** Steps with fewer tokens than this use the matrix-vector kernel; longer ones the tiled one. */
const MAT_VEC_MAX_TOKENS = 4;
/** Rows x tokens of one tiled mul_mat workgroup (8 x 8 invocations, 4 x 4 each). */
const MAT_TILE = 32;
const WG = 64;
const MAX_WORKGROUPS = 65535;
/** Weight uploads go in pieces so Dawn's staging copy stays bounded. */
const UPLOAD_PIECE = 64 << 20;

interface Step {
  nTokens: number;
  nOutputs: number;
  /** First token row kept by output_rows. */
  first: number;
  /** Cache rows a decode step's query sees. */
  kvLength: number;
}

interface Dispatch {
  kind: 'dispatch';
  kernel: Kernel;
  /** One bind group, or one per slot for kernels that touch the KV cache. */
  bindGroups: GPUBindGroup[];
  slotParams: number;
  params: (s: Step) => Record<string, number>;
  /** Workgroups: a count (laid out in 2-D when needed) or an explicit grid. */
  grid: (s: Step) => number | [number, number];
  when?: (s: Step) => boolean;
}

interface Copy {
  kind: 'copy';
  src: GPUBuffer;
  dst: GPUBuffer;
  cols: number;
}

type Item = Dispatch | Copy;

/** A weight tensor's rows, split into bindings of at most the binding limit. */
interface WeightChunks {
  tensor: GraphTensor;
  rowBytes: number;
  chunks: Array<{ buffer: GPUBuffer; firstRow: number; rows: number }>;
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

function grid2d(count: number): [number, number] {
  if (count <= MAX_WORKGROUPS) return [Math.max(count, 1), 1];
  return [MAX_WORKGROUPS, Math.ceil(count / MAX_WORKGROUPS)];
}

const align = (n: number, a: number) => Math.ceil(n / a) * a;

export class WebGpuGraph implements CompiledGraph {
  readonly outputWidth: number;
  private readonly items: Item[] = [];
  private readonly buffers: GPUBuffer[] = [];
  private acts: GPUBuffer[] = [];
  private readonly kv: Array<{ k: GPUBuffer; v: GPUBuffer }> = []; // layer * slots + slot
  private readonly ropes = new Map<string, { angles: RopeAngles; buffer: GPUBuffer; table: Float32Array }>();
  private paramsData!: ArrayBuffer;
  private paramsBuffer!: GPUBuffer;
  private paramsShape = '';
  private slotCount = 0;
  private tokensBuffer!: GPUBuffer;
  private positionsBuffer!: GPUBuffer;
  private readback!: GPUBuffer;
  private argmaxResult!: GPUBuffer;
  private argmaxReadback!: GPUBuffer;
  private argmax!: Dispatch;
  private queue: Promise<unknown> = Promise.resolve();
  private disposed = false;
  private ctx: GpuContext | undefined;
  private readonly slotAlign: number;
  /** How many pipelines the load compiled (tests and benches report it). */
  pipelineCount = 0;

  private constructor(
    ctx: GpuContext,
    private readonly device: GPUDevice,
    private readonly plan: GpuPlan,
    private readonly options: CompileOptions,
    private readonly kernels: KernelCache,
  ) {
    this.ctx = ctx;
    this.outputWidth = plan.graph.tensors[plan.graph.output]!.cols;
    this.slotAlign = Math.max(256, device.limits.minUniformBufferOffsetAlignment);
  }

  static async create(ctx: GpuContext, plan: GpuPlan, options: CompileOptions, tuning: WebGpuTuning = {}): Promise<WebGpuGraph> {
    const { tensors } = plan.graph;
    const limits = ctx.adapter.limits;
    const chunkLimit = Math.floor(Math.min(tuning.maxBindingBytes ?? limits.maxStorageBufferBindingSize, limits.maxBufferSize) / 4) * 4;
    // The largest binding and buffer this graph needs besides the (split) weights.
    const largest = { bytes: chunkLimit > 0 ? Math.min(chunkLimit, maxWeightBytes(plan)) : 0, what: 'a weight tensor' };
    const consider = (bytes: number, what: string) => {
      if (bytes > largest.bytes) Object.assign(largest, { bytes, what });
    };
    plan.bufferFloats.forEach((n) => consider(4 * n, `an activation buffer (maxBatch ${options.maxBatch})`));
    consider(kvBytes(plan, options), `the KV cache of one layer and slot (context ${options.contextSize})`);
    consider(4 * actScratchWords(plan, options), `the quantized activations (maxBatch ${options.maxBatch})`);
    consider(4 * maxHeads(plan) * options.contextSize, `the attention scores (context ${options.contextSize})`);
    for (const t of tensors) {
      if (t.data && rowBytes(t.dtype, t.cols) > chunkLimit) {
        throw new WebGpuLimitError('maxStorageBufferBindingSize', rowBytes(t.dtype, t.cols), chunkLimit, `one row of '${t.name}'`, 'Use backend: \'cpu\'.');
      }
    }
    const device = await openDevice(ctx, { binding: largest, buffer: largest });
    const graph = new WebGpuGraph(ctx, device, plan, options, new KernelCache(device, ctx.constants));
    try {
      await graph.build(chunkLimit);
    } catch (e) {
      graph.dispose();
      throw e;
    }
    return graph;
  }

  // ---- Building

  private usage() {
    return this.ctx!.constants.GPUBufferUsage;
  }

  private buffer(label: string, bytes: number, usage: number): GPUBuffer {
    const b = this.device.createBuffer({ label, size: Math.max(align(bytes, 4), 4), usage });
    this.buffers.push(b);
    return b;
  }

  private storage(label: string, bytes: number): GPUBuffer {
    const u = this.usage();
    return this.buffer(label, bytes, u.STORAGE | u.COPY_SRC | u.COPY_DST);
  }

  private upload(buffer: GPUBuffer, data: ArrayBuffer, offset: number, bytes: number): void {
    const whole = bytes & ~3;
    for (let at = 0; at < whole; at += UPLOAD_PIECE) {
      this.device.queue.writeBuffer(buffer, at, data, offset + at, Math.min(UPLOAD_PIECE, whole - at));
    }
    if (whole < bytes) {
      const tail = new Uint8Array(4);
      tail.set(new Uint8Array(data, offset + whole, bytes - whole));
      this.device.queue.writeBuffer(buffer, whole, tail);
    }
  }

  private defines(extra: ShaderDefines): ShaderDefines {
    return { WG, SUBGROUPS: false, SG_ONLY: false, F16: false, DOT4: this.ctx!.dot4, ...extra };
  }

  private async build(chunkLimit: number): Promise<void> {
    const { plan, options, device } = this;
    const { tensors, nodes } = plan.graph;
    const summary = this.ctx!.summary;
    const u = this.usage();
    this.slotCount = options.slots;

    // Shared inputs of every step.
    this.tokensBuffer = this.storage('tokens', 4 * options.maxBatch);
    this.positionsBuffer = this.storage('positions', 4 * options.maxBatch);
    this.acts = plan.bufferFloats.map((n, i) => this.storage(`activations ${i}`, 4 * n));
    const actOf = (id: number) => this.acts[plan.bufferOf[id]!]!;

    // Weights: raw blocks for tables and matrices, f32 for the small vectors.
    const weights = new Map<number, WeightChunks>();
    const weightOf = (id: number): WeightChunks => {
      let w = weights.get(id);
      if (!w) {
        w = this.uploadWeight(tensors[id]!, chunkLimit);
        weights.set(id, w);
      }
      return w;
    };
    const vectors = new Map<number, GPUBuffer>();
    const vectorOf = (id: number): GPUBuffer => {
      let b = vectors.get(id);
      if (!b) {
        const values = f32Values(tensors[id]!);
        b = this.storage(tensors[id]!.name, values.byteLength);
        device.queue.writeBuffer(b, 0, values);
        vectors.set(id, b);
      }
      return b;
    };

    // KV cache, attention scores and activation scratch.
    const kvElem = options.kvCacheType === 'f16' ? 2 : 4;
    for (let layer = 0; layer < plan.nLayers; layer++) {
      for (let slot = 0; slot < options.slots; slot++) {
        const bytes = options.contextSize * plan.kvWidth * kvElem;
        this.kv.push({ k: this.storage(`k cache ${layer}/${slot}`, bytes), v: this.storage(`v cache ${layer}/${slot}`, bytes) });
      }
    }
    const scores = this.storage('attention scores', 4 * Math.max(1, maxHeads(plan)) * options.contextSize);
    const scratchWords = actScratchWords(plan, options);
    const qWords = options.maxBatch * maxMulMatCols(plan) / 4;
    const scaleWords = options.maxBatch * maxMulMatCols(plan) / 32;
    const scratch = new Map<ActClass, GPUBuffer>();
    const scratchOf = (c: ActClass) => {
      let b = scratch.get(c);
      if (!b) {
        b = this.storage(`${c} activations`, 4 * scratchWords);
        scratch.set(c, b);
      }
      return b;
    };

    // Kernels: every variant this graph uses, compiled concurrently.
    const reduceDefines = { SUBGROUPS: summary.subgroups };
    const sgOnly = summary.subgroups && summary.subgroupMinSize === summary.subgroupMaxSize && summary.subgroupMinSize >= 4;
    const matVecDefines = summary.subgroups && sgOnly ? { SUBGROUPS: true, SG_ONLY: true, WG: summary.subgroupMinSize } : reduceDefines;
    const kvF16 = options.kvCacheType === 'f16';
    const kvDefines = { KV_F16: kvF16, F16: kvF16 && summary.f16, MAX_HEAD_DIM };
    const pending: Array<Promise<unknown>> = [];
    const kernel = (name: string, extra: ShaderDefines): Promise<Kernel> => {
      const k = this.kernels.get(name, this.defines(extra));
      pending.push(k);
      return k;
    };

    type Build = () => Item[];
    const builds: Array<Promise<Build>> = [];
    const holds = new Map<ActClass, number>(); // which tensor each scratch holds, in node order
    const rows = (id: number) => rowsFn(tensors[id]!);

    for (const node of nodes) {
      const out = tensors[node.output]!;
      const outRows = rows(node.output);
      switch (node.op) {
        case Op.GetRows: {
          const table = weightOf(node.inputs[0]!);
          const k = kernel('get_rows', { DTYPE: table.tensor.dtype });
          builds.push(k.then((k) => () => table.chunks.map((c) => this.dispatch(k, [{ w: c.buffer, ids: this.tokensBuffer, y: actOf(node.output) }],
            (s) => ({ cols: out.cols, row_bytes: table.rowBytes, n_tokens: s.nTokens, first_row: c.firstRow, rows: c.rows }),
            (s) => Math.ceil((s.nTokens * out.cols) / WG)))));
          break;
        }
        case Op.RmsNorm: {
          const width = node.params[1]!;
          const k = kernel('rms_norm', reduceDefines);
          const x = node.inputs[0]!;
          builds.push(k.then((k) => () => [this.dispatch(k, [{ x: actOf(x), weight: vectorOf(node.inputs[1]!), y: actOf(node.output) }],
            (s) => ({ width, n_groups: (rows(x)(s) * out.cols) / width, eps: node.params[0]! }),
            (s) => (rows(x)(s) * out.cols) / width)]));
          break;
        }
        case Op.MulMat: {
          const w = weightOf(node.inputs[0]!);
          const x = node.inputs[1]!;
          const type = w.tensor.dtype as GgmlType;
          const cls = actClass(type);
          const cols = w.tensor.cols;
          const xRows = rows(x);
          let prep: Promise<Build> | undefined;
          if (cls !== 'f32' && holds.get(cls) !== x) {
            holds.set(cls, x);
            const buf = scratchOf(cls);
            if (cls === 'f16' || cls === 'bf16') {
              prep = kernel('round_half', { BF16: cls === 'bf16' }).then((k) => () => [this.dispatch(k, [{ x: actOf(x), a: buf }],
                (s) => ({ n: xRows(s) * cols }), (s) => Math.ceil((xRows(s) * cols) / WG))]);
            } else {
              const block = cls === 'q8_0' ? 32 : 256;
              prep = kernel(cls === 'q8_0' ? 'quantize_q8_0' : 'quantize_q8_k', {}).then((k) => () => [this.dispatch(k, [{ x: actOf(x), a: buf }],
                (s) => ({ cols, n_blocks: (xRows(s) * cols) / block, a_d: qWords, a_s: qWords + scaleWords }),
                (s) => Math.ceil((xRows(s) * cols) / block / WG))]);
            }
          }
          if (prep) builds.push(prep);
          const a = cls === 'f32' ? actOf(x) : scratchOf(cls);
          const f16 = type === GgmlType.F16 && summary.f16 && cols % 4 === 0;
          const base = { DTYPE: type, IS_FLOAT: isFloat(type), F16: f16 };
          const vec = kernel('mul_mat_vec', { ...base, ...matVecDefines });
          const tiled = kernel('mul_mat', base);
          const bias = node.inputs.length > 2 ? node.inputs[2]! : undefined;
          const biasKernel = bias !== undefined ? kernel('add_bias', {}) : undefined;
          builds.push(Promise.all([vec, tiled, biasKernel]).then(([vec, tiled, bk]) => () => {
            const y = actOf(node.output);
            const items: Item[] = [];
            for (const c of w.chunks) {
              const resources = { w: c.buffer, a, y, ...(f16 ? { wh: c.buffer } : {}) };
              const params = (s: Step) => ({
                cols, rows: c.rows, row_bytes: w.rowBytes, n_tokens: xRows(s), units: cols / 32,
                a_d: qWords, a_s: qWords + scaleWords, out_cols: w.tensor.rows, out_offset: c.firstRow,
              });
              items.push(this.dispatch(vec, [resources], params, (s) => c.rows * xRows(s), (s) => xRows(s) < MAT_VEC_MAX_TOKENS));
              items.push(this.dispatch(tiled, [resources], params,
                (s) => [Math.ceil(c.rows / MAT_TILE), Math.ceil(xRows(s) / MAT_TILE)], (s) => xRows(s) >= MAT_VEC_MAX_TOKENS));
            }
            if (bk && bias !== undefined) {
              items.push(this.dispatch(bk, [{ bias: vectorOf(bias), y }], (s) => ({ cols: out.cols, n: outRows(s) * out.cols }),
                (s) => Math.ceil((outRows(s) * out.cols) / WG)));
            }
            return items;
          }));
          break;
        }
        case Op.Add:
        case Op.SwiGlu: {
          const name = node.op === Op.Add ? 'add' : 'swiglu';
          const [a, b] = node.op === Op.Add ? ['a', 'b'] : ['gate', 'up'];
          builds.push(kernel(name, {}).then((k) => () => [this.dispatch(k, [{ [a!]: actOf(node.inputs[0]!), [b!]: actOf(node.inputs[1]!), y: actOf(node.output) }],
            (s) => ({ n: outRows(s) * out.cols }), (s) => Math.ceil((outRows(s) * out.cols) / WG))]));
          break;
        }
        case Op.Rope: {
          const [nHeads, headDim, nRot, neox, freqBase, freqScale] = node.params as [number, number, number, number, number, number];
          const ff = node.inputs.length > 1 ? node.inputs[1]! : undefined;
          const key = `${nRot}/${freqBase}/${freqScale}/${ff ?? ''}`;
          let rope = this.ropes.get(key);
          if (!rope) {
            const table = new Float32Array(options.maxBatch * nRot);
            const angles: RopeAngles = { nRot, freqBase, freqScale, ...(ff !== undefined ? { freqFactors: f32Values(tensors[ff]!) } : {}) };
            rope = { angles, table, buffer: this.storage(`rope ${key}`, table.byteLength) };
            this.ropes.set(key, rope);
          }
          const cs = rope.buffer;
          builds.push(kernel('rope', {}).then((k) => () => [this.dispatch(k, [{ x: actOf(node.inputs[0]!), cs, y: actOf(node.output) }],
            (s) => ({ n_heads: nHeads, head_dim: headDim, n_rot: nRot, neox, n: s.nTokens * out.cols }),
            (s) => Math.ceil((s.nTokens * out.cols) / WG))]));
          break;
        }
        case Op.Attention: {
          const [layer, nHeads, nKv, headDim, scale] = node.params as [number, number, number, number, number];
          const [q, k, v] = node.inputs as [number, number, number];
          const kvWidth = plan.kvWidth;
          const slots = Array.from({ length: options.slots }, (_, s) => this.kv[layer * options.slots + s]!);
          const kvWords = kvF16 ? kvWidth / 2 : kvWidth;
          const ctxLen = options.contextSize;
          const geometry = { n_heads: nHeads, n_kv_heads: nKv, head_dim: headDim };
          builds.push(Promise.all([
            kernel('kv_store', { KV_F16: kvF16 }),
            kernel('attention_scores', kvDefines),
            kernel('softmax', reduceDefines),
            kernel('attention_values', kvDefines),
            kernel('attention', { ...kvDefines, ...reduceDefines }),
          ]).then(([store, scoresK, softmax, values, fused]) => () => {
            const y = actOf(node.output);
            const decode = (s: Step) => s.nTokens === 1;
            return [
              this.dispatch(store, slots.map((c) => ({ k: actOf(k), v: actOf(v), positions: this.positionsBuffer, kc: c.k, vc: c.v })),
                (s) => ({ kv_width: kvWidth, n_tokens: s.nTokens }), (s) => Math.ceil((s.nTokens * kvWords) / WG)),
              this.dispatch(scoresK, slots.map((c) => ({ q: actOf(q), kc: c.k, vc: c.v, positions: this.positionsBuffer, scores })),
                () => ({ ...geometry, ctx: ctxLen, scale }), (s) => Math.ceil((nHeads * s.kvLength) / WG), decode),
              this.dispatch(softmax, [{ positions: this.positionsBuffer, x: scores }], () => ({ n_rows: nHeads, stride: ctxLen }), () => nHeads, decode),
              this.dispatch(values, slots.map((c) => ({ probs: scores, kc: c.k, vc: c.v, positions: this.positionsBuffer, y })),
                () => ({ ...geometry, ctx: ctxLen }), () => Math.ceil((nHeads * headDim) / WG), decode),
              this.dispatch(fused, slots.map((c) => ({ q: actOf(q), kc: c.k, vc: c.v, positions: this.positionsBuffer, y })),
                (s) => ({ ...geometry, n_tokens: s.nTokens, scale }), (s) => s.nTokens * nHeads, (s) => !decode(s)),
            ];
          }));
          break;
        }
        case Op.OutputRows: {
          const src = actOf(node.inputs[0]!);
          const dst = actOf(node.output);
          builds.push(Promise.resolve(() => [{ kind: 'copy', src, dst, cols: out.cols }]));
          break;
        }
      }
    }

    // Greedy sampling on the GPU reads the last output row.
    this.argmaxResult = this.storage('argmax', 4);
    const output = plan.graph.output;
    const argmaxKernel = kernel('argmax', { ...reduceDefines, WG: 256 });

    this.pipelineCount = this.kernels.size;
    const built = await Promise.all(builds);
    await Promise.all(pending);
    // Params slots are numbered as dispatches are made, so count them after the item lists exist.
    const lists = built.map((b) => b());
    for (const list of lists) this.items.push(...list);
    this.argmax = this.dispatch(await argmaxKernel, [{ x: actOf(output), result: this.argmaxResult }],
      (s) => ({ n: this.outputWidth, offset: (s.nOutputs - 1) * this.outputWidth, neg_inf: -Infinity }), () => 1);

    this.paramsData = new ArrayBuffer(this.nextSlot * this.slotAlign);
    this.readback = this.buffer('readback', 4 * options.maxBatch * this.outputWidth, u.MAP_READ | u.COPY_DST);
    this.argmaxReadback = this.buffer('argmax readback', 4, u.MAP_READ | u.COPY_DST);
    this.bindAll();
    await device.queue.onSubmittedWorkDone();
  }

  // Bind groups need the params buffer, which is sized once every dispatch is known: dispatches
  // record their resources first and are bound here.
  private nextSlot = 0;
  private unbound: Array<{ d: Dispatch; resources: Array<Record<string, GPUBuffer>> }> = [];

  private dispatch(
    kernel: Kernel,
    resources: Array<Record<string, GPUBuffer>>,
    params: Dispatch['params'],
    grid: Dispatch['grid'],
    when?: Dispatch['when'],
  ): Dispatch {
    const d: Dispatch = { kind: 'dispatch', kernel, bindGroups: [], slotParams: this.nextSlot++, params, grid, ...(when ? { when } : {}) };
    this.unbound.push({ d, resources });
    return d;
  }

  private bindAll(): void {
    const u = this.usage();
    this.paramsBuffer = this.buffer('params', this.paramsData.byteLength, u.UNIFORM | u.COPY_DST);
    for (const { d, resources } of this.unbound) {
      d.bindGroups = resources.map((r) =>
        this.device.createBindGroup({
          layout: d.kernel.layout,
          entries: d.kernel.source.bindings.map((b) => {
            if (b.kind === 'uniform') return { binding: b.binding, resource: { buffer: this.paramsBuffer, offset: d.slotParams * this.slotAlign, size: d.kernel.paramsBytes } };
            const buffer = r[b.name];
            if (!buffer) throw new Error(`kiln: no buffer for binding '${b.name}' of ${d.kernel.source.name}.wgsl`);
            return { binding: b.binding, resource: { buffer } };
          }),
        }),
      );
    }
    this.unbound = [];
  }

  private uploadWeight(t: GraphTensor, chunkLimit: number): WeightChunks {
    const rb = rowBytes(t.dtype, t.cols);
    const perChunk = Math.max(1, Math.floor(chunkLimit / rb));
    const chunks: WeightChunks['chunks'] = [];
    for (let first = 0; first < t.rows; first += perChunk) {
      const rows = Math.min(perChunk, t.rows - first);
      const buffer = this.storage(`${t.name} [${first}, ${first + rows})`, rows * rb);
      this.upload(buffer, t.data!.buffer, t.data!.byteOffset + first * rb, rows * rb);
      chunks.push({ buffer, firstRow: first, rows });
    }
    return { tensor: t, rowBytes: rb, chunks };
  }

  // ---- Running

  private writeParams(s: Step): void {
    const key = `${s.nTokens}/${s.nOutputs}`;
    if (key === this.paramsShape) return;
    const u32 = new Uint32Array(this.paramsData);
    const f32 = new Float32Array(this.paramsData);
    const i32 = new Int32Array(this.paramsData);
    const fill = (d: Dispatch) => {
      const values = d.params(s);
      const base = (d.slotParams * this.slotAlign) / 4;
      d.kernel.source.params.forEach((p, i) => {
        const v = values[p.name];
        if (v === undefined) throw new Error(`kiln: parameter '${p.name}' of ${d.kernel.source.name}.wgsl has no value`);
        if (p.type === 'f32') f32[base + i] = v;
        else if (p.type === 'i32') i32[base + i] = v;
        else u32[base + i] = v;
      });
    };
    for (const item of this.items) if (item.kind === 'dispatch') fill(item);
    fill(this.argmax);
    this.device.queue.writeBuffer(this.paramsBuffer, 0, this.paramsData);
    this.paramsShape = key;
  }

  private record(encoder: GPUCommandEncoder, s: Step, slot: number): void {
    let pass = encoder.beginComputePass();
    for (const item of this.items) {
      if (item.kind === 'copy') {
        pass.end();
        encoder.copyBufferToBuffer(item.src, 4 * s.first * item.cols, item.dst, 0, 4 * s.nOutputs * item.cols);
        pass = encoder.beginComputePass();
        continue;
      }
      if (item.when && !item.when(s)) continue;
      this.encodeDispatch(pass, item, s, slot);
    }
    pass.end();
  }

  private encodeDispatch(pass: GPUComputePassEncoder, d: Dispatch, s: Step, slot: number): void {
    const g = d.grid(s);
    const [x, y] = typeof g === 'number' ? grid2d(g) : g;
    pass.setPipeline(d.kernel.pipeline);
    pass.setBindGroup(0, d.bindGroups[d.bindGroups.length > 1 ? slot : 0]!);
    pass.dispatchWorkgroups(x, y);
  }

  /** Checks a step's arguments as the CPU backend does; returns its shape. */
  private prepare(tokens: Int32Array, positions: Int32Array, slot: number, allOutputs: boolean): Step {
    if (this.disposed) throw new InvalidArgumentError('this WebGPU graph was disposed');
    const { maxBatch, slots, contextSize } = this.options;
    const n = tokens.length;
    if (n < 1 || n > maxBatch) throw new InvalidArgumentError(`a forward step takes 1 to ${maxBatch} tokens, got ${n}`);
    if (positions.length !== n) throw new InvalidArgumentError(`${positions.length} positions for ${n} tokens`);
    if (!Number.isInteger(slot) || slot < 0 || slot >= slots) throw new InvalidArgumentError(`slot ${slot} does not exist`);
    let maxPos = 0;
    for (const p of positions) {
      if (p < 0 || p >= contextSize) throw new InvalidArgumentError(`position ${p} is outside the context of ${contextSize}`);
      maxPos = Math.max(maxPos, p);
    }
    for (const node of this.plan.graph.nodes) {
      if (node.op !== Op.GetRows) continue;
      const vocab = this.plan.graph.tensors[node.inputs[0]!]!.rows;
      for (const t of tokens) if (t < 0 || t >= vocab) throw new InvalidArgumentError(`token id ${t} is outside the vocabulary of ${vocab}`);
    }
    const nOutputs = allOutputs ? n : 1;
    return { nTokens: n, nOutputs, first: allOutputs ? 0 : n - 1, kvLength: maxPos + 1 };
  }

  /** Writes the step's inputs and records it; returns the encoder for the caller's readback. */
  private encodeStep(tokens: Int32Array, positions: Int32Array, slot: number, s: Step): GPUCommandEncoder {
    const q = this.device.queue;
    q.writeBuffer(this.tokensBuffer, 0, tokens.buffer, tokens.byteOffset, tokens.byteLength);
    q.writeBuffer(this.positionsBuffer, 0, positions.buffer, positions.byteOffset, positions.byteLength);
    for (const rope of this.ropes.values()) {
      ropeTable(positions, s.nTokens, rope.angles, rope.table);
      q.writeBuffer(rope.buffer, 0, rope.table.buffer, 0, s.nTokens * rope.angles.nRot * 4);
    }
    this.writeParams(s);
    const encoder = this.device.createCommandEncoder();
    this.record(encoder, s, slot);
    return encoder;
  }

  /** Runs one step at a time: the activation buffers and readback are shared. */
  private serial<T>(run: () => Promise<T>): Promise<T> {
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  forward(tokens: Int32Array, positions: Int32Array, slot: number, allOutputs: boolean, out: Float32Array): Promise<void> {
    return this.serial(async () => {
      const s = this.prepare(tokens, positions, slot, allOutputs);
      const bytes = 4 * s.nOutputs * this.outputWidth;
      if (out.length < s.nOutputs * this.outputWidth) {
        throw new InvalidArgumentError(`the output buffer holds ${out.length} values; ${s.nOutputs * this.outputWidth} are needed`);
      }
      const encoder = this.encodeStep(tokens, positions, slot, s);
      encoder.copyBufferToBuffer(this.acts[this.plan.bufferOf[this.plan.graph.output]!]!, 0, this.readback, 0, bytes);
      this.device.queue.submit([encoder.finish()]);
      await this.readback.mapAsync(this.ctx!.constants.GPUMapMode.READ, 0, bytes);
      out.set(new Float32Array(this.readback.getMappedRange(0, bytes)));
      this.readback.unmap();
    });
  }

  /** A forward step that returns only the argmax of the last output row (greedy sampling). */
  forwardArgmax(tokens: Int32Array, positions: Int32Array, slot: number): Promise<number> {
    return this.serial(async () => {
      const s = this.prepare(tokens, positions, slot, false);
      const encoder = this.encodeStep(tokens, positions, slot, s);
      const pass = encoder.beginComputePass();
      this.encodeDispatch(pass, this.argmax, s, slot);
      pass.end();
      encoder.copyBufferToBuffer(this.argmaxResult, 0, this.argmaxReadback, 0, 4);
      this.device.queue.submit([encoder.finish()]);
      await this.argmaxReadback.mapAsync(this.ctx!.constants.GPUMapMode.READ, 0, 4);
      const index = new Uint32Array(this.argmaxReadback.getMappedRange(0, 4))[0]!;
      this.argmaxReadback.unmap();
      return index;
    });
  }

  copySlot(from: number, to: number, n: number): void {
    const { slots, contextSize } = this.options;
    if (![from, to].every((s) => Number.isInteger(s) && s >= 0 && s < slots)) throw new InvalidArgumentError('copySlot: slot out of range');
    if (!Number.isInteger(n) || n < 0 || n > contextSize) throw new InvalidArgumentError('copySlot: length out of range');
    if (from === to || n === 0) return;
    const bytes = n * this.plan.kvWidth * (this.options.kvCacheType === 'f16' ? 2 : 4);
    const encoder = this.device.createCommandEncoder();
    for (let layer = 0; layer < this.plan.nLayers; layer++) {
      const a = this.kv[layer * slots + from]!;
      const b = this.kv[layer * slots + to]!;
      encoder.copyBufferToBuffer(a.k, 0, b.k, 0, align(bytes, 4));
      encoder.copyBufferToBuffer(a.v, 0, b.v, 0, align(bytes, 4));
    }
    this.device.queue.submit([encoder.finish()]);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const b of this.buffers) b.destroy();
    this.device.destroy();
    this.ctx = undefined; // drops Dawn's instance so the process can exit
  }
}

// ---- Sizes

/** Rows of a tensor in a step. */
function rowsFn(t: GraphTensor): (s: Step) => number {
  if (t.rows === ROWS_PER_TOKEN) return (s) => s.nTokens;
  if (t.rows === ROWS_PER_OUTPUT) return (s) => s.nOutputs;
  return () => t.rows;
}

function f32Values(t: GraphTensor): Float32Array {
  const n = t.rows * t.cols;
  const bytes = new Uint8Array(t.data!.buffer, t.data!.byteOffset, t.data!.byteLength);
  return t.dtype === GgmlType.F32 ? new Float32Array(bytes.slice().buffer, 0, n) : dequantize(t.dtype as GgmlType, bytes, n);
}

function weightTensors(plan: GpuPlan): GraphTensor[] {
  const { nodes, tensors } = plan.graph;
  return nodes.filter((n) => n.op === Op.MulMat || n.op === Op.GetRows).map((n) => tensors[n.inputs[0]!]!);
}

function maxWeightBytes(plan: GpuPlan): number {
  return Math.max(0, ...weightTensors(plan).map((t) => t.data!.byteLength));
}

function maxMulMatCols(plan: GpuPlan): number {
  const { nodes, tensors } = plan.graph;
  return Math.max(256, ...nodes.filter((n) => n.op === Op.MulMat).map((n) => align(tensors[n.inputs[0]!]!.cols, 256)));
}

/** Words of one activation scratch: a float per value (F16/BF16 weights), or packed int8 values
 *  followed by a scale and a sum per 32 values (quantized weights), which take fewer. */
function actScratchWords(plan: GpuPlan, options: CompileOptions): number {
  return options.maxBatch * maxMulMatCols(plan);
}

function maxHeads(plan: GpuPlan): number {
  return Math.max(0, ...plan.graph.nodes.filter((n: GraphNode) => n.op === Op.Attention).map((n) => n.params[1]!));
}

function kvBytes(plan: GpuPlan, options: CompileOptions): number {
  return options.contextSize * plan.kvWidth * (options.kvCacheType === 'f16' ? 2 : 4);
}
