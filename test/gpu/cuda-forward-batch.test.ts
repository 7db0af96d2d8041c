// CompiledGraph.forwardBatch on the CUDA backend (a GPU, or the CPU emulation of the kernels:
// native/cuda/emulation): one step over rows of several slots, each slot's rows storing into and
// attending over its own cache with the launches a step of those rows alone would make, gives
// each slot's rows the outputs they get in a step of their own on the same backend, within
// TOLERANCE: the CUDA products pick their kernel by the step's row count (row-streaming mat-vec up
// to 8 rows, int8 or F32 tiles above), and those sum a row's products in different orders. A
// decode row in a 15-row step, or an output row of a 6-output step that alone would have 11, takes
// another kernel than alone: about 1e-6 of the logits' range apart (F32 tiles vs mat-vec), where a
// row attending to another slot's cache is off by 1e-1 or more.
import { describe, expect, it } from 'vitest';
import { CudaBackend, type CudaGraph } from '../../src/backend/cuda/cuda-backend.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { buildDecoderGraph } from '../../src/model/decoder-graph.js';
import { readHParams } from '../../src/model/hparams.js';
import { ModelWeights } from '../../src/model/weights.js';
import { MODELS } from '../helpers/paths.js';
import { malformedStepsRefused, mixedStepMatchesSolo, SCENARIO_SLOTS, withGraphs } from '../model/forward-batch-scenario.js';
import { cudaSkipReason, cudaTitle } from './cuda-device.js';

const CONTEXT = 96;
const TOLERANCE = 1e-4;

async function compile(model: string, kvCacheType: 'f32' | 'f16', graphs = true): Promise<{ graph: CudaGraph; vocab: number }> {
  const { file, buffer } = openGguf(`${MODELS}/${model}.gguf`);
  const hp = readHParams(file);
  const g = buildDecoderGraph(hp, new ModelWeights(file, buffer, hp.architecture));
  return { graph: await new CudaBackend({ graphs }).compile(g, { slots: SCENARIO_SLOTS, contextSize: CONTEXT, maxBatch: 48, kvCacheType, threads: 1 }), vocab: hp.vocabSize };
}

const cases = [['stories260K', 'f32'], ['tiny-llama-q4_0', 'f16'], ['tiny-qwen3-q8_0', 'f32']] as const;

describe.skipIf(cudaSkipReason)(cudaTitle('CUDA forwardBatch'), () => {
  it.each(cases)('%s, %s KV cache: four decoding slots at different depths and a prefill chunk give each slot its solo outputs', async (model, kv) => {
    await withGraphs(2, () => compile(model, kv), async (batched, solo) => {
      await mixedStepMatchesSolo(batched.graph, solo.graph, batched.vocab, TOLERANCE);
    });
  });

  it.each(cases)('%s, %s KV cache: decode rows of four slots at different depths (one kernel choice) give their solo outputs bit for bit', async (model, kv) => {
    await withGraphs(2, () => compile(model, kv), async (batched, solo) => {
      const w = batched.graph.outputWidth;
      const depths = [5, 2, 9, 4];
      const ints = (a: number[]) => Int32Array.from(a);
      for (const g of [batched.graph, solo.graph]) {
        for (const [s, d] of depths.entries()) {
          const prompt = Array.from({ length: d }, (_, i) => ((i + 3) * (s + 7) * 31) % (batched.vocab - 1) + 1);
          await g.forward(ints(prompt), ints([...prompt.keys()]), s, false, new Float32Array(w));
        }
      }
      const order = [3, 1, 0, 2];
      const tokens = order.map((s) => 11 + 5 * s);
      const out = new Float32Array(order.length * w);
      await batched.graph.forwardBatch({ tokens: ints(tokens), positions: ints(order.map((s) => depths[s]!)), slots: ints(order), outputs: ints([0, 1, 2, 3]) }, out);
      for (const [j, s] of order.entries()) {
        const row = new Float32Array(w);
        await solo.graph.forward(ints([tokens[j]!]), ints([depths[s]!]), s, false, row);
        expect(out.subarray(j * w, (j + 1) * w), `slot ${s}`).toEqual(row);
      }
    });
  });

  it('refuses a malformed step before any work, and the graph stays usable', async () => {
    await withGraphs(1, () => compile('stories260K', 'f32'), async ({ graph, vocab }) => {
      await malformedStepsRefused(graph, CONTEXT, vocab);
    });
  });
});
