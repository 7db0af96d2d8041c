// CompiledGraph.forwardBatch on the CPU backend: rows of several slots in one step give, bit for
// bit, the outputs each slot's rows give in a step of their own (batch invariance), on every
// shared model and both KV cache types, and a malformed step is refused before any work.
import { describe, expect, it } from 'vitest';
import type { CompiledGraph } from '../../src/backend/backend.js';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { buildDecoderGraph } from '../../src/model/decoder-graph.js';
import { readHParams } from '../../src/model/hparams.js';
import { ModelWeights } from '../../src/model/weights.js';
import { MODELS } from '../helpers/paths.js';

const SLOTS = 5;

async function compile(model: string, kvCacheType: 'f32' | 'f16'): Promise<{ graph: CompiledGraph; vocab: number }> {
  const { file, buffer } = openGguf(`${MODELS}/${model}.gguf`);
  const hp = readHParams(file);
  const g = buildDecoderGraph(hp, new ModelWeights(file, buffer, hp.architecture));
  return { graph: await new CpuBackend().compile(g, { slots: SLOTS, contextSize: 96, maxBatch: 48, kvCacheType, threads: 2 }), vocab: hp.vocabSize };
}

const seq = (n: number, seed: number, vocab: number) => Array.from({ length: n }, (_, i) => (((i + 1) * 37 + seed * 101) % (vocab - 10)) + 5);
const ints = (a: number[]) => Int32Array.from(a);

const cases = [
  ['stories260K', 'f32'], ['stories260K', 'f16'], ['tiny-llama-q4_0', 'f32'], ['tiny-llama-q8_0', 'f16'], ['tiny-qwen2-f16', 'f32'], ['tiny-qwen3-q8_0', 'f32'],
] as const;

describe.each(cases)('forwardBatch on %s, %s KV cache', (model, kv) => {
  it('four decoding slots at different depths and a prefill chunk give each slot its solo outputs', async () => {
    const batched = await compile(model, kv);
    const solo = await compile(model, kv);
    try {
      const w = batched.graph.outputWidth;
      // Slots 0-3 hold prompts of different lengths, prefilled alone in both graphs.
      const depths = [3, 17, 8, 30];
      const prompts = depths.map((d, s) => seq(d, s + 1, batched.vocab));
      for (const g of [batched.graph, solo.graph]) {
        for (const [s, p] of prompts.entries()) await g.forward(ints(p), ints([...p.keys()]), s, false, new Float32Array(w));
      }
      // One step: slot 2's and slot 0's next tokens, slot 4's 11-token prompt, slots 3's and 1's next tokens.
      const next = depths.map((_, s) => seq(1, 40 + s, batched.vocab)[0]!);
      const fresh = seq(11, 9, batched.vocab);
      const order = [2, 0, 4, 3, 1];
      const tokens: number[] = [];
      const positions: number[] = [];
      const slots: number[] = [];
      for (const s of order) {
        const rows = s === 4 ? fresh : [next[s]!];
        rows.forEach((t, i) => {
          tokens.push(t);
          positions.push(s === 4 ? i : depths[s]!);
          slots.push(s);
        });
      }
      // Every decode row's output, and two of the prefill chunk's (a middle one and the last).
      const outputs = [0, 1, 2 + 4, 2 + 10, 13, 14];
      const out = new Float32Array(outputs.length * w);
      await batched.graph.forwardBatch({ tokens: ints(tokens), positions: ints(positions), slots: ints(slots), outputs: ints(outputs) }, out);

      const soloRow = async (s: number) => {
        const row = new Float32Array(w);
        await solo.graph.forward(ints([next[s]!]), ints([depths[s]!]), s, false, row);
        return row;
      };
      const allFresh = new Float32Array(fresh.length * w);
      await solo.graph.forward(ints(fresh), ints([...fresh.keys()]), 4, true, allFresh);
      const expected = [await soloRow(2), await soloRow(0), allFresh.subarray(4 * w, 5 * w), allFresh.subarray(10 * w, 11 * w), await soloRow(3), await soloRow(1)];
      for (const [j, e] of expected.entries()) expect(out.subarray(j * w, (j + 1) * w)).toEqual(e);

      // The next step reads what the batched step wrote into each slot's cache: decode all five together.
      const after = order.map((s) => seq(1, 60 + s, batched.vocab)[0]!);
      const afterPos = order.map((s) => (s === 4 ? fresh.length : depths[s]! + 1));
      const out2 = new Float32Array(order.length * w);
      await batched.graph.forwardBatch({ tokens: ints(after), positions: ints(afterPos), slots: ints(order), outputs: ints([0, 1, 2, 3, 4]) }, out2);
      for (const [j, s] of order.entries()) {
        const row = new Float32Array(w);
        await solo.graph.forward(ints([after[j]!]), ints([afterPos[j]!]), s, false, row);
        expect(out2.subarray(j * w, (j + 1) * w)).toEqual(row);
      }
    } finally {
      batched.graph.dispose();
      solo.graph.dispose();
    }
  });
});

describe('forwardBatch refuses a malformed step', () => {
  it('rows of one slot split apart, unknown slots, unordered or out-of-range outputs, mismatched lengths', async () => {
    const { graph } = await compile('stories260K', 'f32');
    try {
      const out = new Float32Array(4 * graph.outputWidth);
      const step = (slots: number[], positions: number[], outputs: number[]) =>
        graph.forwardBatch({ tokens: ints(slots.map(() => 7)), positions: ints(positions), slots: ints(slots), outputs: ints(outputs) }, out);
      await expect(step([0, 1, 0], [0, 0, 1], [2])).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(step([0, SLOTS], [0, 0], [1])).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(step([0, 1], [0, 0], [1, 0])).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(step([0, 1], [0, 0], [2])).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(graph.forwardBatch({ tokens: ints([7, 7]), positions: ints([0]), slots: ints([0, 1]), outputs: ints([1]) }, out)).rejects.toBeInstanceOf(InvalidArgumentError);
      // Still usable afterwards.
      await graph.forwardBatch({ tokens: ints([7, 8]), positions: ints([0, 0]), slots: ints([0, 1]), outputs: ints([0, 1]) }, out);
    } finally {
      graph.dispose();
    }
  });
});
