// A planned graph on a WebGPU device. Loading opens the device with the limits the graph needs,
// uploads the weights and compiles every pipeline; a forward step (rows of one or several slots)
// writes the token ids, positions, each slot's rows and the RoPE angles, records the whole step
// into one command encoder, and reads back only the output rows (or the argmax index).
/// <reference types="@webgpu/types" />
import { rowBytes } from '../../gguf/ggml-type.js';
import { Op } from '../../model/graph.js';
import { InvalidArgumentError } from '../../errors.js';
import type { BatchStep, CompileOptions, CompiledGraph } from '../backend.js';
import { batchSegments } from '../batch-segments.js';
import { type Dispatch, DispatchTable, type Step } from './dispatch-table.js';
import { WebGpuLimitError, WebGpuUnavailableError } from './errors.js';
import { type GpuContext, openDevice } from './gpu-device.js';
import { align, GpuBuffers } from './gpu-buffers.js';
import { type GraphWork, graphWork, maxHeads, maxMulMatCols } from './graph-dispatches.js';
import { fmaIsFused } from './fma-probe.js';
import { KernelCache } from './kernels.js';
import type { GpuPlan } from './plan.js';
import { RopeTable } from './rope-table.js';

export interface WebGpuTuning {
  /** Largest weight binding in bytes; larger tensors are split by rows. Default: the adapter's limit. */
  maxBindingBytes?: number;
}

export class WebGpuGraph implements CompiledGraph {
  readonly outputWidth: number;
  /** How many pipeline variants the load compiled. */
  readonly pipelineCount: number;
  private readonly readback: GPUBuffer;
  private readonly argmaxReadback: GPUBuffer;
  private queue: Promise<unknown> = Promise.resolve();
  private disposed = false;
  private ctx: GpuContext | undefined;
  /** The first device error or loss: every later step fails with it rather than return garbage. */
  private failure: string | undefined;

  private constructor(
    ctx: GpuContext,
    private readonly device: GPUDevice,
    private readonly plan: GpuPlan,
    private readonly options: CompileOptions,
    private readonly buffers: GpuBuffers,
    private readonly work: GraphWork,
    private readonly table: DispatchTable,
    private readonly argmax: Dispatch,
    kernels: KernelCache,
    /** The (cos, sin) tables of work.ropes, computed by the CPU backend. */
    private readonly ropeTables: RopeTable[],
  ) {
    this.ctx = ctx;
    this.outputWidth = plan.graph.tensors[plan.graph.output]!.cols;
    this.pipelineCount = kernels.size;
    this.readback = buffers.readback('readback', 4 * options.maxBatch * this.outputWidth);
    this.argmaxReadback = buffers.readback('argmax readback', 4);
    device.onuncapturederror = (e) => {
      this.failure ??= e.error.message;
    };
    void device.lost.then((info) => {
      if (!this.disposed) this.failure ??= `the device was lost (${info.reason}): ${info.message}`;
    });
  }

  private checkDevice(): void {
    if (this.failure) throw new WebGpuUnavailableError(`The WebGPU device failed: ${this.failure}. Load the model again, or use backend: 'cpu'.`);
  }

  static async create(ctx: GpuContext, plan: GpuPlan, options: CompileOptions, tuning: WebGpuTuning = {}): Promise<WebGpuGraph> {
    const limits = ctx.adapter.limits;
    const chunkLimit = Math.floor(Math.min(tuning.maxBindingBytes ?? limits.maxStorageBufferBindingSize, limits.maxBufferSize) / 4) * 4;
    for (const t of plan.graph.tensors) {
      if (t.data && rowBytes(t.dtype, t.cols) > chunkLimit) {
        ctx.release();
        throw new WebGpuLimitError('maxStorageBufferBindingSize', rowBytes(t.dtype, t.cols), chunkLimit, `one row of '${t.name}'`, "Use backend: 'cpu'.");
      }
    }
    let device: GPUDevice;
    try {
      device = await openDevice(ctx, largestBinding(plan, options, chunkLimit));
    } catch (e) {
      ctx.release();
      throw e;
    }
    const buffers = new GpuBuffers(device, ctx.constants.GPUBufferUsage, chunkLimit);
    let ropeTables: RopeTable[] = [];
    try {
      const work = graphWork(plan, options, buffers, { ...ctx.summary, dot4: ctx.dot4, fusedFma: await fmaIsFused(device, ctx.constants) });
      const kernels = new KernelCache(device, ctx.constants);
      const { table, extra } = await DispatchTable.create(device, kernels, buffers, work.items, [work.argmax]);
      await device.queue.onSubmittedWorkDone();
      ropeTables = work.ropes.map((r) => new RopeTable(r.angles, options.contextSize, options.maxBatch));
      return new WebGpuGraph(ctx, device, plan, options, buffers, work, table, extra[0]!, kernels, ropeTables);
    } catch (e) {
      for (const r of ropeTables) r.dispose();
      buffers.destroy();
      device.destroy();
      ctx.release();
      throw e;
    }
  }

  /** Checks a step's arguments as the CPU backend does (typed errors, before any work); returns its shape. */
  private prepare(step: BatchStep): Step {
    if (this.disposed) throw new InvalidArgumentError('this WebGPU graph was disposed');
    this.checkDevice();
    const { maxBatch, slots, contextSize } = this.options;
    const { tokens, positions } = step;
    const n = tokens.length;
    if (n < 1 || n > maxBatch) throw new InvalidArgumentError(`a forward step takes 1 to ${maxBatch} tokens, got ${n}`);
    if (positions.length !== n) throw new InvalidArgumentError(`${positions.length} positions for ${n} tokens`);
    const ranges = batchSegments(step, slots);
    for (const p of positions) {
      if (p < 0 || p >= contextSize) throw new InvalidArgumentError(`position ${p} is outside the context of ${contextSize}`);
    }
    for (const node of this.plan.graph.nodes) {
      if (node.op !== Op.GetRows) continue;
      const vocab = this.plan.graph.tensors[node.inputs[0]!]!.rows;
      for (const t of tokens) if (t < 0 || t >= vocab) throw new InvalidArgumentError(`token id ${t} is outside the vocabulary of ${vocab}`);
    }
    const segments = ranges.map(([begin, end]) => ({ slot: step.slots[begin]!, begin, rows: end - begin, kvLength: positions[end - 1]! + 1 }));
    return { nTokens: n, nOutputs: step.outputs.length, outputs: step.outputs, segments, kvLength: 0 };
  }

  /** Writes the step's inputs and records it; returns the encoder for the caller's readback. */
  private async encodeStep(tokens: Int32Array, positions: Int32Array, s: Step): Promise<GPUCommandEncoder> {
    const q = this.device.queue;
    q.writeBuffer(this.work.tokens, 0, tokens.buffer, tokens.byteOffset, tokens.byteLength);
    q.writeBuffer(this.work.positions, 0, positions.buffer, positions.byteOffset, positions.byteLength);
    for (const g of s.segments) q.writeBuffer(this.work.segments[g.slot]!, 0, Uint32Array.of(g.begin, g.rows));
    for (const [i, rope] of this.work.ropes.entries()) {
      await this.ropeTables[i]!.fill(positions, rope.table);
      q.writeBuffer(rope.buffer, 0, rope.table.buffer, 0, s.nTokens * rope.angles.nRot * 4);
    }
    this.table.writeParams(s);
    const encoder = this.device.createCommandEncoder();
    this.table.record(encoder, s);
    return encoder;
  }

  /** One step at a time: activation buffers and readback are shared by every step. */
  private serial<T>(run: () => Promise<T>): Promise<T> {
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  async forward(tokens: Int32Array, positions: Int32Array, slot: number, allOutputs: boolean, out: Float32Array): Promise<void> {
    return this.forwardBatch(oneSlot(tokens, positions, slot, allOutputs), out);
  }

  forwardBatch(step: BatchStep, out: Float32Array): Promise<void> {
    return this.serial(async () => {
      const s = this.prepare(step);
      const values = this.work.outputRows(s) * this.outputWidth;
      if (out.length < values) throw new InvalidArgumentError(`the output buffer holds ${out.length} values; ${values} are needed`);
      const encoder = await this.encodeStep(step.tokens, step.positions, s);
      if (values === 0) {
        this.device.queue.submit([encoder.finish()]);
        await this.device.queue.onSubmittedWorkDone();
        this.checkDevice();
        return;
      }
      encoder.copyBufferToBuffer(this.work.output, 0, this.readback, 0, 4 * values);
      this.device.queue.submit([encoder.finish()]);
      await this.readback.mapAsync(this.ctx!.constants.GPUMapMode.READ, 0, 4 * values);
      out.set(new Float32Array(this.readback.getMappedRange(0, 4 * values)));
      this.readback.unmap();
      this.checkDevice();
    });
  }

  /** A forward step that reads back only the argmax of the output's last row (greedy sampling). */
  forwardArgmax(tokens: Int32Array, positions: Int32Array, slot: number): Promise<number> {
    return this.serial(async () => {
      const s = this.prepare(oneSlot(tokens, positions, slot, false));
      const encoder = await this.encodeStep(tokens, positions, s);
      const pass = encoder.beginComputePass();
      DispatchTable.dispatch(pass, this.argmax, s, this.argmax.bindGroups[0]!);
      pass.end();
      encoder.copyBufferToBuffer(this.work.argmaxResult, 0, this.argmaxReadback, 0, 4);
      this.device.queue.submit([encoder.finish()]);
      await this.argmaxReadback.mapAsync(this.ctx!.constants.GPUMapMode.READ, 0, 4);
      const index = new Uint32Array(this.argmaxReadback.getMappedRange(0, 4))[0]!;
      this.argmaxReadback.unmap();
      this.checkDevice();
      return index;
    });
  }

  copySlot(from: number, to: number, n: number): void {
    const { slots, contextSize } = this.options;
    if (![from, to].every((s) => Number.isInteger(s) && s >= 0 && s < slots)) throw new InvalidArgumentError('copySlot: slot out of range');
    if (!Number.isInteger(n) || n < 0 || n > contextSize) throw new InvalidArgumentError('copySlot: length out of range');
    if (from === to || n === 0) return;
    const bytes = align(n * this.plan.kvWidth * (this.options.kvCacheType === 'f16' ? 2 : 4), 4);
    const encoder = this.device.createCommandEncoder();
    for (let layer = 0; layer < this.plan.nLayers; layer++) {
      const a = this.work.kv[layer * slots + from]!;
      const b = this.work.kv[layer * slots + to]!;
      encoder.copyBufferToBuffer(a.k, 0, b.k, 0, bytes);
      encoder.copyBufferToBuffer(a.v, 0, b.v, 0, bytes);
    }
    this.device.queue.submit([encoder.finish()]);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const r of this.ropeTables) r.dispose();
    this.buffers.destroy();
    this.device.destroy();
    this.ctx!.release();
    this.ctx = undefined;
  }
}

/** The largest binding (and buffer) the graph needs, and what needs it: weights come in chunks. */
function largestBinding(plan: GpuPlan, options: CompileOptions, chunkLimit: number) {
  const { nodes, tensors } = plan.graph;
  const weights = nodes.filter((n) => n.op === Op.MulMat || n.op === Op.GetRows).map((n) => tensors[n.inputs[0]!]!.data!.byteLength);
  const largest = { bytes: Math.min(chunkLimit, Math.max(0, ...weights)), what: 'a weight tensor' };
  const consider = (bytes: number, what: string) => {
    if (bytes > largest.bytes) Object.assign(largest, { bytes, what });
  };
  plan.bufferFloats.forEach((n) => consider(4 * n, `an activation buffer (maxBatch ${options.maxBatch})`));
  consider(options.contextSize * plan.kvWidth * (options.kvCacheType === 'f16' ? 2 : 4), `the KV cache of one layer and slot (contextSize ${options.contextSize})`);
  consider(4 * options.maxBatch * maxMulMatCols(plan), `the converted activations (maxBatch ${options.maxBatch})`);
  consider(4 * maxHeads(plan) * options.contextSize, `the attention scores (contextSize ${options.contextSize})`);
  return { binding: largest, buffer: largest };
}

/** A step of one slot's rows: every row's output, or the last row's. */
function oneSlot(tokens: Int32Array, positions: Int32Array, slot: number, allOutputs: boolean): BatchStep {
  // Checked here: an Int32Array would turn a fractional or NaN slot into another slot's number.
  if (!Number.isInteger(slot)) throw new InvalidArgumentError(`slot ${slot} does not exist`);
  const n = tokens.length;
  return {
    tokens,
    positions,
    slots: new Int32Array(n).fill(slot),
    outputs: allOutputs ? Int32Array.from({ length: n }, (_, i) => i) : n > 0 ? Int32Array.of(n - 1) : new Int32Array(0),
  };
}
