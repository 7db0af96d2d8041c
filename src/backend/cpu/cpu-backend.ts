// The CPU backend: the graph becomes one native plan, executed in C++ by one call per step.
import { GgmlType } from '../../gguf/ggml-type.js';
import type { Graph } from '../../model/graph.js';
import { native } from '../../native/binding.js';
import { InvalidArgumentError } from '../../errors.js';
import type { Backend, CompileOptions, CompiledGraph } from '../backend.js';
import { batchSegments } from '../batch-segments.js';
import { nativeStepError, toNativeGraph } from '../native-graph.js';

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
    const queued = (step: () => Promise<void>): Promise<void> => {
      const run = tail.then(step).catch((err: unknown) => {
        throw nativeStepError(err);
      });
      tail = run.catch(() => {});
      return run;
    };
    return {
      outputWidth,
      forward: (tokens, positions, slot, allOutputs, out) => queued(() => plan.forward(tokens, positions, slot, allOutputs, out)),
      forwardBatch: async (step, out) => {
        // Typed errors for a malformed step; the native plan checks it again before any work.
        batchSegments(step, options.slots);
        return queued(() => plan.forwardBatch(step.tokens, step.positions, step.slots, step.outputs, out));
      },
      copySlot: (from, to, n) => plan.copySlot(from, to, n),
      dispose: () => plan.dispose(),
    };
  }
}
