// Every table case, fed whole, one code point at a time, in pieces of 2/3/5/8/13, cut at every
// marker boundary ±1 and in seeded random pieces: the client receives exactly the final parse, and
// the streamer never disagrees with it along the way.
import { describe, expect, it } from 'vitest';
import { prng } from '../../helpers/prng.js';
import { CASES } from './cases.js';
import { allChunkings, checkRun, streamChunks } from './harness.js';

describe('chunking invariance', () => {
  for (const c of CASES) {
    it(`${c.format}: ${c.name}`, () => {
      const rng = prng(0x5eed ^ c.text.length);
      let first: string | null = null;
      for (const chunks of allChunkings(c.text, rng)) {
        const run = streamChunks(chunks, { format: c.format, startsInReasoning: c.startsInReasoning });
        checkRun(run, chunks, true);
        expect(run.received.content).toBe(c.content);
        expect(run.received.calls.map((x) => [x.name, x.arguments])).toEqual(c.calls);
        // Same ids too: they are minted in the same order whatever the chunking.
        const key = JSON.stringify(run.received);
        if (first === null) first = key;
        else expect(key).toBe(first);
      }
    });
  }
});
