// The graph as the native addon's planners (CPU and CUDA) take it: weights as ArrayBuffer views.
import { InvalidArgumentError } from '../errors.js';
import type { Graph } from '../model/graph.js';
import type { NativeGraph } from '../native/binding.js';

/**
 * A native plan's step error as kiln's: a step the plan refuses (its `kilnCode` 'invalid_step': a
 * token id, position, slot or size out of range) becomes an InvalidArgumentError; anything else
 * is returned as it is.
 */
export function nativeStepError(err: unknown): unknown {
  if ((err as { kilnCode?: string } | null)?.kilnCode !== 'invalid_step') return err;
  return new InvalidArgumentError(err instanceof Error ? err.message : String(err));
}

export function toNativeGraph(graph: Graph): NativeGraph {
  return {
    output: graph.output,
    nodes: graph.nodes,
    tensors: graph.tensors.map((t) => ({
      name: t.name,
      dtype: t.dtype,
      cols: t.cols,
      rows: t.rows,
      ...(t.data ? { data: t.data.buffer, byteOffset: t.data.byteOffset, byteLength: t.data.byteLength } : {}),
    })),
  };
}
