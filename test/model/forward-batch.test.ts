// CompiledGraph.forwardBatch on the CPU backend: rows of several slots in one step give, bit for
// bit, the outputs each slot's rows give in a step of their own (batch invariance), on every
// shared model and both KV cache types, and a malformed step is refused before any work.
import { describe, it } from 'vitest';
import type { CompiledGraph } from '../../src/backend/backend.js';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { buildDecoderGraph } from '../../src/model/decoder-graph.js';
import { readHParams } from '../../src/model/hparams.js';
import { ModelWeights } from '../../src/model/weights.js';
import { MODELS } from '../helpers/paths.js';
import { malformedStepsRefused, mixedStepMatchesSolo, SCENARIO_SLOTS } from './forward-batch-scenario.js';

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
    const batched = await compile(model, kv);
    const solo = await compile(model, kv);
    try {
      await mixedStepMatchesSolo(batched.graph, solo.graph, batched.vocab);
    } finally {
      batched.graph.dispose();
      solo.graph.dispose();
    }
  });
});

describe('forwardBatch refuses a malformed step', () => {
  it('before any work, and the graph stays usable', async () => {
    const { graph, vocab } = await compile('stories260K', 'f32');
    try {
      await malformedStepsRefused(graph, CONTEXT, vocab);
    } finally {
      graph.dispose();
    }
  });
});
