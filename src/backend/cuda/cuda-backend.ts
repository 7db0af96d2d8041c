// The CUDA backend: the graph becomes one native CudaPlan (native/cuda). Weights are copied to the
// device once, when the graph is compiled; each forward step then runs on the device from one
// N-API call, replayed as a CUDA graph once its shape repeats.
import type { Graph } from '../../model/graph.js';
import { GgmlType } from '../../gguf/ggml-type.js';
import { type CudaDevice, type CudaDeviceList, native, type NativeCudaPlan } from '../../native/binding.js';
import type { Backend, BatchStep, CompileOptions, CompiledGraph } from '../backend.js';
import { batchSegments } from '../batch-segments.js';
import { cudaErrorFrom, CudaUnavailableError } from './errors.js';
import { nativeStepError, toNativeGraph } from '../native-graph.js';

/** A failed step's typed error: a step the plan refuses, or a failure on the device. */
function stepError(err: unknown): never {
  const typed = nativeStepError(err);
  throw typed === err ? cudaErrorFrom(err) : typed;
}

export interface CudaBackendOptions {
  /** CUDA device index; default 0. */
  device?: number;
  /** Capture repeated step shapes as CUDA graphs; default true. KILN_CUDA_GRAPHS=0 turns them off too. */
  graphs?: boolean;
  /** Called with the fraction of the weights copied to the device, from 0 to 1. */
  onProgress?: (fraction: number) => void;
}

/** The CUDA devices this build runs on, with the reason when there are none. Never throws. */
export function cudaDevices(): CudaDeviceList {
  try {
    return native().cudaDevices();
  } catch (err) {
    return { devices: [], reason: (err as Error).message, architectures: '' };
  }
}

/** A compiled graph on a CUDA device; beyond CompiledGraph, greedy steps and device timing. */
export class CudaGraph implements CompiledGraph {
  constructor(
    private readonly plan: NativeCudaPlan,
    readonly outputWidth: number,
    readonly device: CudaDevice,
    private readonly slots: number,
  ) {}

  forward(tokens: Int32Array, positions: Int32Array, slot: number, allOutputs: boolean, out: Float32Array): Promise<void> {
    return this.plan.forward(tokens, positions, slot, allOutputs, out).catch(stepError);
  }

  async forwardBatch(step: BatchStep, out: Float32Array): Promise<void> {
    // Typed errors for a malformed step; the native plan checks it again before any work.
    batchSegments(step, this.slots);
    return this.plan.forwardBatch(step.tokens, step.positions, step.slots, step.outputs, out).catch(stepError);
  }

  /** A forward step that returns the argmax of the last token's output row, copying back 4 bytes instead of the row. */
  forwardArgmax(tokens: Int32Array, positions: Int32Array, slot: number): Promise<number> {
    return this.plan.forwardArgmax(tokens, positions, slot).catch(stepError);
  }

  /** Device milliseconds per step over `iterations` runs of one step; the step writes the slot's KV cache. */
  benchmark(tokens: Int32Array, positions: Int32Array, slot: number, iterations: number): Promise<number> {
    return this.plan.benchmark(tokens, positions, slot, iterations);
  }

  /** Device bytes held for weights, activations and the KV cache. */
  memory(): { weights: number; activations: number; kvCache: number } {
    return this.plan.memory();
  }

  copySlot(from: number, to: number, n: number): void {
    this.plan.copySlot(from, to, n);
  }

  dispose(): void {
    this.plan.dispose();
  }
}

export class CudaBackend implements Backend {
  readonly name = 'cuda' as const;

  constructor(private readonly options: CudaBackendOptions = {}) {}

  async compile(graph: Graph, options: CompileOptions): Promise<CudaGraph> {
    const index = this.options.device ?? 0;
    const list = cudaDevices();
    const device = list.devices.find((d) => d.index === index);
    if (!device) {
      const found = list.devices.map((d) => `${d.index}: ${d.name}`).join(', ');
      throw new CudaUnavailableError(list.devices.length === 0
        ? `The CUDA backend has no device: ${list.reason ?? 'none was found'}. Use backend: 'cpu'.`
        : `CUDA device ${index} is not available; usable devices: ${found}.`);
    }
    const nativeGraph = toNativeGraph(graph);
    let plan: NativeCudaPlan;
    try {
      plan = new (native().CudaPlan)(nativeGraph, {
        threads: 1,
        slots: options.slots,
        contextSize: options.contextSize,
        maxBatch: options.maxBatch,
        kvType: options.kvCacheType === 'f16' ? GgmlType.F16 : GgmlType.F32,
        device: index,
        graphs: (this.options.graphs ?? true) && process.env.KILN_CUDA_GRAPHS !== '0',
      });
    } catch (err) {
      throw cudaErrorFrom(err);
    }
    try {
      await plan.upload(this.options.onProgress);
    } catch (err) {
      plan.dispose();
      throw cudaErrorFrom(err);
    }
    return new CudaGraph(plan, graph.tensors[graph.output]!.cols, device, options.slots);
  }
}
