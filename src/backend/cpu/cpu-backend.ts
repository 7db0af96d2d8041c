// The CPU backend: the graph becomes one native plan, executed in C++ by one call per step.
import { GgmlType } from '../../gguf/ggml-type.js';
import type { Graph } from '../../model/graph.js';
import { native } from '../../native/binding.js';
import { InvalidArgumentError } from '../../errors.js';
import type { Backend, CompileOptions, CompiledGraph } from '../backend.js';
import { forwardBatchBySlot } from '../forward-batch-by-slot.js';
import { toNativeGraph } from '../native-graph.js';

export class CpuBackend implements Backend {
  readonly name = 'cpu' as const;

  async compile(graph: Graph, options: CompileOptions): Promise<CompiledGraph> {
    const addon = native();
    const nativeGraph = toNativeGraph(graph);
    if (!Number.isInteger(options.threads) || options.threads < 1) throw new InvalidArgumentError(`threads must be a positive integer, got ${options.threads}`, 'threads');
    const plan = new addon.Plan(nativeGraph, {
      threads: options.threads,
      slots: options.slots,
      contextSize: options.contextSize,
      maxBatch: options.maxBatch,
      kvType: options.kvCacheType === 'f16' ? GgmlType.F16 : GgmlType.F32,
    });
    const outputWidth = graph.tensors[graph.output]!.cols;
    // The plan runs one step at a time; requests on other slots queue here, in call order.
    let tail: Promise<unknown> = Promise.resolve();
    const forward: CompiledGraph['forward'] = (tokens, positions, slot, allOutputs, out) => {
      const run = tail.then(() => plan.forward(tokens, positions, slot, allOutputs, out));
      tail = run.catch(() => {});
      return run;
    };
    return {
      outputWidth,
      forward,
      forwardBatch: (step, out) => forwardBatchBySlot(forward, outputWidth, options.slots, step, out),
      copySlot: (from, to, n) => plan.copySlot(from, to, n),
      dispose: () => plan.dispose(),
    };
  }
}
