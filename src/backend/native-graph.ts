// The graph as the native addon's planners (CPU and CUDA) take it: weights as ArrayBuffer views.
import type { Graph } from '../model/graph.js';
import type { NativeGraph } from '../native/binding.js';

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
