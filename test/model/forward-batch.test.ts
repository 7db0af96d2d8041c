// CompiledGraph.forwardBatch on the CPU backend: rows of several slots in one step give, bit for
// bit, the outputs each slot's rows give in a step of their own, and a malformed step is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledGraph } from '../../src/backend/backend.js';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { buildDecoderGraph } from '../../src/model/decoder-graph.js';
import { readHParams } from '../../src/model/hparams.js';
import { ModelWeights } from '../../src/model/weights.js';
import { MODELS } from '../helpers/paths.js';

let graph: CompiledGraph;
let solo: CompiledGraph;
const SLOTS = 3;

async function compile(): Promise<CompiledGraph> {
  const { file, buffer } = openGguf(`${MODELS}/stories260K.gguf`);
  const hp = readHParams(file);
  const g = buildDecoderGraph(hp, new ModelWeights(file, buffer, hp.architecture));
  return new CpuBackend().compile(g, { slots: SLOTS, contextSize: 64, maxBatch: 32, kvCacheType: 'f32', threads: 2 });
}

beforeAll(async () => {
  graph = await compile();
  solo = await compile();
});
afterAll(() => {
  graph.dispose();
  solo.dispose();
});

const seq = (n: number, seed: number) => Array.from({ length: n }, (_, i) => ((i + 1) * 37 + seed * 101) % 500 + 5);

describe('forwardBatch', () => {
  it('a mixed step (two prefill chunks and a decode token) gives each slot its solo outputs', async () => {
    const w = graph.outputWidth;
    const a = seq(9, 1);
    const b = seq(6, 2);
    const c = seq(4, 3);
    // Slot 2 first decodes on a cached prefix: prefill its first 3 tokens alone, in both graphs.
    for (const g of [graph, solo]) await g.forward(Int32Array.from(c.slice(0, 3)), Int32Array.from([0, 1, 2]), 2, false, new Float32Array(w));

    // Batched: slot 0 all of a, slot 2 its 4th token (position 3), slot 1 all of b.
    const tokens = Int32Array.from([...a, c[3]!, ...b]);
    const positions = Int32Array.from([...a.keys(), 3, ...b.keys()]);
    const slots = Int32Array.from([...a.map(() => 0), 2, ...b.map(() => 1)]);
    const outputs = Int32Array.from([4, 8, 9, 10 + 5]);
    const out = new Float32Array(outputs.length * w);
    await graph.forwardBatch({ tokens, positions, slots, outputs }, out);

    const allA = new Float32Array(a.length * w);
    await solo.forward(Int32Array.from(a), Int32Array.from(a.keys()), 0, true, allA);
    const lastC = new Float32Array(w);
    await solo.forward(Int32Array.from([c[3]!]), Int32Array.from([3]), 2, false, lastC);
    const lastB = new Float32Array(w);
    await solo.forward(Int32Array.from(b), Int32Array.from(b.keys()), 1, false, lastB);

    expect(out.subarray(0, w)).toEqual(allA.subarray(4 * w, 5 * w));
    expect(out.subarray(w, 2 * w)).toEqual(allA.subarray(8 * w, 9 * w));
    expect(out.subarray(2 * w, 3 * w)).toEqual(lastC);
    expect(out.subarray(3 * w, 4 * w)).toEqual(lastB);
  });

  it('refuses rows of one slot that are split or not consecutive, unknown slots and unordered outputs', async () => {
    const out = new Float32Array(4 * graph.outputWidth);
    const step = (slots: number[], positions: number[], outputs: number[]) =>
      graph.forwardBatch({ tokens: Int32Array.from(slots.map(() => 7)), positions: Int32Array.from(positions), slots: Int32Array.from(slots), outputs: Int32Array.from(outputs) }, out);
    await expect(step([0, 1, 0], [0, 0, 1], [2])).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(step([0, 0], [0, 2], [1])).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(step([0, 3], [0, 0], [1])).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(step([0, 1], [0, 0], [1, 0])).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
