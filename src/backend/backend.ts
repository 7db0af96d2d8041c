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

/**
 * One forward step over tokens of several sequences (continuous batching). Row i is token
 * `tokens[i]` at `positions[i]` in slot `slots[i]`; the rows of one slot are contiguous (a decode
 * token or a prefill chunk). Attention reads only the token's own slot's cache (its positions up
 * to the token's, including rows of this step before it).
 */
export interface BatchStep {
  tokens: Int32Array;
  positions: Int32Array;
  slots: Int32Array;
  /** Rows whose output is wanted, ascending; output j is written at `out[j * outputWidth]`. */
  outputs: Int32Array;
}

export interface CompiledGraph {
  /** Width of one output row (the vocabulary for a model). */
  readonly outputWidth: number;
  /**
   * One forward step: `tokens` at `positions` in `slot`. Writes the last token's output row (or
   * every token's, when allOutputs) into `out`.
   */
  forward(tokens: Int32Array, positions: Int32Array, slot: number, allOutputs: boolean, out: Float32Array): Promise<void>;
  /**
   * One forward step over a batch of sequences; writes the requested rows' outputs to `out`.
   * A row's output does not depend on the other rows of the step (batch invariance).
   */
  forwardBatch(step: BatchStep, out: Float32Array): Promise<void>;
  /** Copies KV positions [0, n) from one slot to another. */
  copySlot(from: number, to: number, n: number): void;
  dispose(): void;
}

export interface Backend {
  readonly name: BackendName;
  /** Plans the graph; rejects here (never mid-forward) what this backend cannot run. */
  compile(graph: Graph, options: CompileOptions): Promise<CompiledGraph>;
}
