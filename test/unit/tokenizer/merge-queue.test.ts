// The merge queue pops best priority first and, among equals, the leftmost pair.
import { describe, expect, it } from 'vitest';
import { MergeQueue } from '../../../src/tokenizer/merge-queue.js';
import { prng } from '../../helpers/prng.js';

describe('MergeQueue', () => {
  it('pops in (priority, left) order', () => {
    const r = prng(7);
    const q = new MergeQueue();
    const entries: [number, number][] = [];
    for (let i = 0; i < 500; i++) {
      const e: [number, number] = [r.int(20), r.int(1000)];
      entries.push(e);
      q.push(e[0], e[1], e[1] + 1, i);
    }
    const popped: [number, number][] = [];
    const out: [number, number, number] = [0, 0, 0];
    while (q.length > 0) {
      q.pop(out);
      popped.push([entries[out[2]]![0], out[0]]);
    }
    const sorted = [...entries].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(popped).toEqual(sorted);
  });
});
