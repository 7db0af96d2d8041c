// The checks every backend makes on a batched step before any work, with typed errors.
import { InvalidArgumentError } from '../errors.js';
import type { BatchStep } from './backend.js';

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
