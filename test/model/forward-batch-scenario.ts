// The batch-invariance scenario every backend's forwardBatch test runs: four slots decoding at
// different depths and one slot's prefill chunk in one step give, bit for bit, the outputs each
// slot's rows give in a step of their own on a second graph of the same backend; so does the next
// step, which reads what the batched one wrote into every cache. And the malformed steps a backend
// must refuse before any work, with InvalidArgumentError.
import { expect } from 'vitest';
import type { CompiledGraph } from '../../src/backend/backend.js';
import { InvalidArgumentError } from '../../src/errors.js';

/** Graphs compiled with at least this many slots. */
export const SCENARIO_SLOTS = 5;

const seq = (n: number, seed: number, vocab: number) => Array.from({ length: n }, (_, i) => (((i + 1) * 37 + seed * 101) % (vocab - 10)) + 5);
const ints = (a: number[]) => Int32Array.from(a);

/**
 * Runs the scenario; rows must be equal bit for bit, or with `tolerance`, within that fraction of
 * the expected row's largest magnitude (for a backend whose kernel choice depends on the step's
 * row count: see its test for why).
 */
/** A backend's compiled graph of a shared model, with the model's vocabulary size. */
export interface CompiledModel {
  graph: CompiledGraph;
  vocab: number;
}

/** Compiles `count` graphs, hands them to `use`, and disposes of them whatever happens. */
export async function withGraphs(count: number, compile: () => Promise<CompiledModel>, use: (...models: CompiledModel[]) => Promise<void>): Promise<void> {
  const models: CompiledModel[] = [];
  try {
    for (let i = 0; i < count; i++) models.push(await compile());
    await use(...models);
  } finally {
    for (const m of models) m.graph.dispose();
  }
}

export async function mixedStepMatchesSolo(batched: CompiledGraph, solo: CompiledGraph, vocab: number, tolerance = 0): Promise<void> {
  const w = batched.outputWidth;
  const expectRow = (actual: Float32Array, expected: Float32Array, what: string) => {
    if (tolerance === 0) return expect(actual, what).toEqual(expected);
    let scale = 0;
    let diff = 0;
    for (let i = 0; i < expected.length; i++) {
      scale = Math.max(scale, Math.abs(expected[i]!));
      diff = Math.max(diff, Math.abs(actual[i]! - expected[i]!));
    }
    expect(diff, `${what}: largest difference, of a row up to ${scale}`).toBeLessThanOrEqual(tolerance * scale);
  };
  // Slots 0-3 hold prompts of different lengths, prefilled alone in both graphs.
  const depths = [3, 17, 8, 30];
  const prompts = depths.map((d, s) => seq(d, s + 1, vocab));
  for (const g of [batched, solo]) {
    for (const [s, p] of prompts.entries()) await g.forward(ints(p), ints([...p.keys()]), s, false, new Float32Array(w));
  }
  // One step: slot 2's and slot 0's next tokens, slot 4's 11-token prompt, slots 3's and 1's next tokens.
  const next = depths.map((_, s) => seq(1, 40 + s, vocab)[0]!);
  const fresh = seq(11, 9, vocab);
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
  await batched.forwardBatch({ tokens: ints(tokens), positions: ints(positions), slots: ints(slots), outputs: ints(outputs) }, out);

  const soloRow = async (s: number) => {
    const row = new Float32Array(w);
    await solo.forward(ints([next[s]!]), ints([depths[s]!]), s, false, row);
    return row;
  };
  const allFresh = new Float32Array(fresh.length * w);
  await solo.forward(ints(fresh), ints([...fresh.keys()]), 4, true, allFresh);
  const expected = [await soloRow(2), await soloRow(0), allFresh.subarray(4 * w, 5 * w), allFresh.subarray(10 * w, 11 * w), await soloRow(3), await soloRow(1)];
  for (const [j, e] of expected.entries()) expectRow(out.subarray(j * w, (j + 1) * w), e, `output ${j}`);

  // The next step reads what the batched step wrote into each slot's cache: decode all five together.
  const after = order.map((s) => seq(1, 60 + s, vocab)[0]!);
  const afterPos = order.map((s) => (s === 4 ? fresh.length : depths[s]! + 1));
  const out2 = new Float32Array(order.length * w);
  await batched.forwardBatch({ tokens: ints(after), positions: ints(afterPos), slots: ints(order), outputs: ints([0, 1, 2, 3, 4]) }, out2);
  for (const [j, s] of order.entries()) {
    const row = new Float32Array(w);
    await solo.forward(ints([after[j]!]), ints([afterPos[j]!]), s, false, row);
    expectRow(out2.subarray(j * w, (j + 1) * w), row, `slot ${s} after the step`);
  }

  // A prompt chunk that wants no output still fills every layer's cache (the last block's rows past
  // its attention are then none at all): slot 4 takes three tokens that way, then one more whose
  // output matches the solo graph's, which took the three as an ordinary prompt.
  const chunk = seq(3, 80, vocab);
  const chunkPos = chunk.map((_, i) => fresh.length + 1 + i);
  const last = seq(1, 90, vocab);
  const lastPos = [fresh.length + 1 + chunk.length];
  const out3 = new Float32Array(w);
  await batched.forwardBatch({ tokens: ints(chunk), positions: ints(chunkPos), slots: ints([4, 4, 4]), outputs: ints([]) }, out3);
  await batched.forwardBatch({ tokens: ints(last), positions: ints(lastPos), slots: ints([4]), outputs: ints([0]) }, out3);
  const row = new Float32Array(w);
  await solo.forward(ints(chunk), ints(chunkPos), 4, false, row);
  await solo.forward(ints(last), ints(lastPos), 4, false, row);
  expectRow(out3, row, 'slot 4 after a chunk without outputs');
}

/** Rows of one slot split apart, unknown slots, unordered or out-of-range outputs, mismatched lengths, bad positions and tokens, a short output buffer (graphs of SCENARIO_SLOTS slots). */
export async function malformedStepsRefused(graph: CompiledGraph, contextSize: number, vocab: number): Promise<void> {
  const out = new Float32Array(4 * graph.outputWidth);
  const step = (slots: number[], positions: number[], outputs: number[], token = 7) =>
    graph.forwardBatch({ tokens: ints(slots.map(() => token)), positions: ints(positions), slots: ints(slots), outputs: ints(outputs) }, out);
  await expect(step([0, 1, 0], [0, 0, 1], [2])).rejects.toBeInstanceOf(InvalidArgumentError);
  await expect(step([0, SCENARIO_SLOTS], [0, 0], [1])).rejects.toBeInstanceOf(InvalidArgumentError);
  await expect(step([0, -1], [0, 0], [1])).rejects.toBeInstanceOf(InvalidArgumentError);
  await expect(step([0, 1], [0, 0], [1, 0])).rejects.toBeInstanceOf(InvalidArgumentError);
  await expect(step([0, 1], [0, 0], [1, 1])).rejects.toBeInstanceOf(InvalidArgumentError);
  await expect(step([0, 1], [0, 0], [2])).rejects.toBeInstanceOf(InvalidArgumentError);
  await expect(step([0, 1], [0, 0], [-1])).rejects.toBeInstanceOf(InvalidArgumentError);
  // Checked by the native plan on some backends (refused on its worker thread): typed all the same.
  const refused = async (p: Promise<void>, message: RegExp) => {
    await expect(p).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(p).rejects.toThrow(message);
  };
  await refused(step([0, 1], [0, contextSize], [1]), /outside the context/);
  await refused(step([0, 1], [0, -1], [1]), /outside the context/);
  await refused(step([0, 1], [0, 0], [1], vocab), /outside the vocabulary/);
  await refused(step([0, 1], [0, 0], [1], -3), /outside the vocabulary/);
  await refused(step([0, 1, 2, 3, 4], [0, 0, 0, 0, 0], [0, 1, 2, 3, 4]), /output buffer holds/);
  await expect(graph.forwardBatch({ tokens: ints([7, 7]), positions: ints([0]), slots: ints([0, 1]), outputs: ints([1]) }, out)).rejects.toBeInstanceOf(InvalidArgumentError);
  await expect(graph.forwardBatch({ tokens: ints([]), positions: ints([]), slots: ints([]), outputs: ints([]) }, out)).rejects.toBeInstanceOf(InvalidArgumentError);
  // Still usable afterwards, and a step may want no outputs at all.
  await graph.forwardBatch({ tokens: ints([7, 8]), positions: ints([0, 0]), slots: ints([0, 1]), outputs: ints([]) }, out);
  await graph.forwardBatch({ tokens: ints([7, 8]), positions: ints([0, 0]), slots: ints([0, 1]), outputs: ints([0, 1]) }, out);
}
