// CompiledGraph.forwardBatch on the CPU backend: rows of several slots in one step give, bit for
// bit, the outputs each slot's rows give in a step of their own (batch invariance), on every
// shared model and both KV cache types, and a malformed step is refused before any work.
import { describe, expect, it } from 'vitest';
import type { CompiledGraph } from '../../src/backend/backend.js';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { toNativeGraph } from '../../src/backend/native-graph.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { buildDecoderGraph } from '../../src/model/decoder-graph.js';
import { readHParams } from '../../src/model/hparams.js';
import { ModelWeights } from '../../src/model/weights.js';
import { native } from '../../src/native/binding.js';
import { MODELS } from '../helpers/paths.js';
import { malformedStepsRefused, mixedStepMatchesSolo, SCENARIO_SLOTS, withGraphs } from './forward-batch-scenario.js';

const CONTEXT = 96;

async function compile(model: string, kvCacheType: 'f32' | 'f16'): Promise<{ graph: CompiledGraph; vocab: number }> {
  const { file, buffer } = openGguf(`${MODELS}/${model}.gguf`);
  const hp = readHParams(file);
  const g = buildDecoderGraph(hp, new ModelWeights(file, buffer, hp.architecture));
  return { graph: await new CpuBackend().compile(g, { slots: SCENARIO_SLOTS, contextSize: CONTEXT, maxBatch: 48, kvCacheType, threads: 2 }), vocab: hp.vocabSize };
}

const cases = [
  ['stories260K', 'f32'], ['stories260K', 'f16'], ['tiny-llama-q4_0', 'f32'], ['tiny-llama-q8_0', 'f16'], ['tiny-qwen2-f16', 'f32'], ['tiny-qwen3-q8_0', 'f32'],
] as const;

describe.each(cases)('forwardBatch on %s, %s KV cache', (model, kv) => {
  it('four decoding slots at different depths and a prefill chunk give each slot its solo outputs', async () => {
    await withGraphs(2, () => compile(model, kv), async (batched, solo) => {
      await mixedStepMatchesSolo(batched.graph, solo.graph, batched.vocab);
    });
  });
});

describe('forwardBatch refuses a malformed step', () => {
  it('before any work, and the graph stays usable', async () => {
    await withGraphs(1, () => compile('stories260K', 'f32'), async ({ graph, vocab }) => {
      await malformedStepsRefused(graph, CONTEXT, vocab);
    });
  });
});

describe('the native plan checks a batched step itself', () => {
  it('refuses what the JS layer would have caught, before any work, and stays usable', async () => {
    const { file, buffer } = openGguf(`${MODELS}/stories260K.gguf`);
    const hp = readHParams(file);
    const g = buildDecoderGraph(hp, new ModelWeights(file, buffer, hp.architecture));
    const plan = new (native().Plan)(toNativeGraph(g), { threads: 1, slots: 2, contextSize: 16, maxBatch: 4, kvType: GgmlType.F32 });
    try {
      const w = g.tensors[g.output]!.cols;
      const out = new Float32Array(4 * w);
      const i = (a: number[]) => Int32Array.from(a);
      const step = (tokens: number[], positions: number[], slots: number[], outputs: number[], o = out) => plan.forwardBatch(i(tokens), i(positions), i(slots), i(outputs), o);
      await expect(step([1, 2, 3], [0, 0, 1], [0, 1, 0], [2])).rejects.toThrow(/not contiguous/);
      await expect(step([1, 2], [0, 0], [0, 2], [1])).rejects.toThrow(/slot 2 does not exist/);
      await expect(step([1, 2], [0, 0], [0, -1], [1])).rejects.toThrow(/slot -1 does not exist/);
      await expect(step([1, 2], [0, 16], [0, 1], [1])).rejects.toThrow(/outside the context/);
      await expect(step([1, 2], [0, 0], [0, 1], [1, 0])).rejects.toThrow(/ascending row indices/);
      await expect(step([1, 2], [0, 0], [0, 1], [1, 1])).rejects.toThrow(/ascending row indices/);
      await expect(step([1, 2], [0, 0], [0, 1], [2])).rejects.toThrow(/ascending row indices/);
      await expect(step([1, 2], [0, 0], [0, 1], [0, 1, 1])).rejects.toThrow(/cannot output 3 rows/);
      await expect(step([1, hp.vocabSize], [0, 0], [0, 1], [1])).rejects.toThrow(/outside the vocabulary/);
      await expect(step([1, 2, 3, 4, 5], [0, 1, 2, 3, 4], [0, 0, 0, 0, 0], [4])).rejects.toThrow(/1 to 4 tokens/);
      await expect(step([1, 2], [0, 0], [0, 1], [0, 1], new Float32Array(w))).rejects.toThrow(/output buffer/);
      expect(() => plan.forwardBatch(i([1, 2]), i([0]), i([0, 1]), i([1]), out)).toThrow(/same length/);
      await step([1, 2], [0, 0], [0, 1], [0, 1]);
    } finally {
      plan.dispose();
    }
  });
});
