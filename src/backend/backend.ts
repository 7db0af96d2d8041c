// What every backend implements: compile a graph once, then run forward steps on it.
import type { Graph } from '../model/graph.js';

export type BackendName = 'cpu' | 'webgpu' | 'cuda';

export interface CompileOptions {
  /** Sequence slots, each with its own KV cache. */
  slots: number;
  contextSize: number;
  /** Most tokens per forward step; longer prompts are split. */
  maxBatch: number;
  kvCacheType: 'f32' | 'f16';
  threads: number;
}

export interface CompiledGraph {
  /** Width of one output row (the vocabulary for a model). */
  readonly outputWidth: number;
  /**
   * One forward step: `tokens` at `positions` in `slot`. Writes the last token's output row (or
   * every token's, when allOutputs) into `out`.
   */
  forward(tokens: Int32Array, positions: Int32Array, slot: number, allOutputs: boolean, out: Float32Array): Promise<void>;
  /** Copies KV positions [0, n) from one slot to another. */
  copySlot(from: number, to: number, n: number): void;
  dispose(): void;
}

export interface Backend {
  readonly name: BackendName;
  /** Plans the graph; rejects here (never mid-forward) what this backend cannot run. */
  compile(graph: Graph, options: CompileOptions): Promise<CompiledGraph>;
}
