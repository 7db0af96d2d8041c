// A batch step run as one forward per slot segment: what a backend without a native batched
// step does. Correct (the same rows, the same outputs) but reads the weights once per segment.
import { InvalidArgumentError } from '../errors.js';
import type { BatchStep, CompiledGraph } from './backend.js';

type Forward = CompiledGraph['forward'];

/** Checks a batch step's shape; returns the slot segments as [start, end) row ranges. */
export function batchSegments(step: BatchStep, slots: number): Array<[number, number]> {
  const { tokens, positions, slots: rowSlots, outputs } = step;
  const n = tokens.length;
  if (n < 1) throw new InvalidArgumentError('a batch step needs at least one token');
  if (positions.length !== n || rowSlots.length !== n) throw new InvalidArgumentError(`a batch step of ${n} tokens has ${positions.length} positions and ${rowSlots.length} slots`);
  const segments: Array<[number, number]> = [];
  const seen = new Set<number>();
  for (let i = 0; i < n; i++) {
    const slot = rowSlots[i]!;
    if (!Number.isInteger(slot) || slot < 0 || slot >= slots) throw new InvalidArgumentError(`slot ${slot} does not exist`);
    if (i > 0 && slot === rowSlots[i - 1]) {
      segments[segments.length - 1]![1] = i + 1;
      continue;
    }
    if (seen.has(slot)) throw new InvalidArgumentError(`slot ${slot}'s rows are not contiguous in the batch`);
    seen.add(slot);
    segments.push([i, i + 1]);
  }
  for (let j = 0; j < outputs.length; j++) {
    const r = outputs[j]!;
    if (!Number.isInteger(r) || r < 0 || r >= n || (j > 0 && r <= outputs[j - 1]!)) throw new InvalidArgumentError('batch outputs must be ascending row indices of the step');
  }
  return segments;
}

/** Runs `step` segment by segment through `forward`, copying the requested rows into `out`. */
export async function forwardBatchBySlot(forward: Forward, width: number, slots: number, step: BatchStep, out: Float32Array): Promise<void> {
  const segments = batchSegments(step, slots);
  if (out.length < step.outputs.length * width) throw new InvalidArgumentError(`the output buffer holds ${out.length} values; ${step.outputs.length * width} are needed`);
  let j = 0;
  for (const [start, end] of segments) {
    const wanted: number[] = [];
    while (j < step.outputs.length && step.outputs[j]! < end) wanted.push(step.outputs[j++]!);
    const onlyLast = wanted.length === 0 || (wanted.length === 1 && wanted[0] === end - 1);
    const rows = onlyLast ? 1 : end - start;
    const buf = new Float32Array(rows * width);
    await forward(step.tokens.subarray(start, end), step.positions.subarray(start, end), step.slots[start]!, !onlyLast, buf);
    const first = j - wanted.length;
    for (const [k, r] of wanted.entries()) {
      const from = onlyLast ? 0 : (r - start) * width;
      out.set(buf.subarray(from, from + width), (first + k) * width);
    }
  }
}
