// CompiledGraph.forwardBatch on the WebGPU backend: one step over rows of several slots (each
// slot's cache written and read by its own rows only) gives, bit for bit, what each slot's rows
// give in a step of their own on the same backend: a decode row takes the same kernels either way
// (mat-vec and tiled mat-mul both sum in the CPU backend's order), and attention runs per slot.
import { describe, it } from 'vitest';
import { WebGpuBackend, type WebGpuBackendOptions } from '../../src/backend/webgpu/webgpu-backend.js';
import type { WebGpuGraph } from '../../src/backend/webgpu/webgpu-graph.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { buildDecoderGraph } from '../../src/model/decoder-graph.js';
import { readHParams } from '../../src/model/hparams.js';
import { ModelWeights } from '../../src/model/weights.js';
import { MODELS } from '../helpers/paths.js';
import { malformedStepsRefused, mixedStepMatchesSolo, SCENARIO_SLOTS, withGraphs } from '../model/forward-batch-scenario.js';
import { featureConfigs, skipReason, title } from './gpu-adapter.js';

const CONTEXT = 96;

async function compile(model: string, kvCacheType: 'f32' | 'f16', features: WebGpuBackendOptions = {}): Promise<{ graph: WebGpuGraph; vocab: number }> {
  const { file, buffer } = openGguf(`${MODELS}/${model}.gguf`);
  const hp = readHParams(file);
  const g = buildDecoderGraph(hp, new ModelWeights(file, buffer, hp.architecture));
  return { graph: await new WebGpuBackend(features).compile(g, { slots: SCENARIO_SLOTS, contextSize: CONTEXT, maxBatch: 48, kvCacheType, threads: 2 }), vocab: hp.vocabSize };
}

const cases = [['stories260K', 'f32'], ['stories260K', 'f16'], ['tiny-llama-q4_0', 'f32'], ['tiny-qwen3-q8_0', 'f16']] as const;

describe.skipIf(skipReason)(title('WebGPU forwardBatch'), () => {
  it.each(cases)('%s, %s KV cache: four decoding slots at different depths and a prefill chunk give each slot its solo outputs', async (model, kv) => {
    await withGraphs(2, () => compile(model, kv), async (batched, solo) => {
      await mixedStepMatchesSolo(batched.graph, solo.graph, batched.vocab);
    });
  });

  it.each(featureConfigs.slice(1))('$name: the scenario on stories260K', async ({ options }) => {
    await withGraphs(2, () => compile('stories260K', 'f32', options), async (batched, solo) => {
      await mixedStepMatchesSolo(batched.graph, solo.graph, batched.vocab);
    });
  });

  it('refuses a malformed step before any work, and the graph stays usable', async () => {
    await withGraphs(1, () => compile('stories260K', 'f32'), async ({ graph, vocab }) => {
      await malformedStepsRefused(graph, CONTEXT, vocab);
    });
  });
});
