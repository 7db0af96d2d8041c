// Seeded fuzz: random replies with markers, multibyte and control characters, in random chunkings.
// No throw escapes, and the client always receives exactly the final parse. The million-run
// version is `npm run bench -- streamer --fuzz 1000000`.
import { describe, expect, it } from 'vitest';
import { prng } from '../../helpers/prng.js';
import { parseToolCalls } from '../../../src/tool-calls/index.js';
import { fuzzOnce, fuzzText } from './fuzz-text.js';
import { TOOLS } from './harness.js';

const ITERATIONS = 20_000;

describe('fuzz', () => {
  it(`${ITERATIONS} random replies and chunkings`, () => {
    const rng = prng(20_240_611);
    for (let k = 0; k < ITERATIONS; k++) fuzzOnce(rng);
  });

  it('parseToolCalls never throws on random text in any format', () => {
    const rng = prng(7);
    for (let k = 0; k < 5000; k++) {
      for (const format of ['hermes', 'mistral', 'llama3_json', 'qwen3_coder'] as const) {
        const text = fuzzText(rng, format);
        const r = parseToolCalls(text, { format, tools: TOOLS, startsInReasoning: rng.next() < 0.5 });
        for (const c of r.calls) expect(() => JSON.parse(c.arguments)).not.toThrow();
      }
    }
  });
});
