// Mutated and truncated copies of the shared models go through the whole load path (GGUF reader,
// hyperparameters, tokenizer, graph, native plan) and a short generation: each either works or
// fails with a KilnError; the process never crashes and nothing else escapes.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KilnError, Runtime } from '../../src/index.js';
import { prng } from '../helpers/prng.js';
import { MODELS } from '../helpers/paths.js';

const ITERATIONS = Number(process.env.KILN_FUZZ_ITERATIONS ?? 300);
const dir = mkdtempSync(join(tmpdir(), 'kiln-hostile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('hostile model files', () => {
  it(`${ITERATIONS} mutated models load and run or fail with a KilnError`, async () => {
    const originals = ['stories260K.gguf', 'tiny-qwen3-q8_0.gguf'].map((f) => new Uint8Array(readFileSync(join(MODELS, f))));
    const r = prng(2024);
    const outcomes = new Map<string, number>();
    for (let i = 0; i < ITERATIONS; i++) {
      const src = originals[i % originals.length]!;
      const bytes = src.slice();
      let view = bytes;
      const kind = r.int(4);
      if (kind === 0) {
        view = bytes.subarray(0, r.int(bytes.length));
      } else {
        // Most mutations land in the header, metadata and tensor infos, where structure lives.
        const span = kind === 1 ? Math.min(bytes.length, 64 * 1024) : bytes.length;
        for (let m = 1 + r.int(8); m > 0; m--) bytes[r.int(span)] = r.int(256);
      }
      const path = join(dir, `m${i}.gguf`);
      writeFileSync(path, view);
      let outcome = 'ok';
      try {
        const rt = await Runtime.load({ model: path, threads: 1, contextSize: 64 });
        try {
          await rt.complete({ prompt: 'Once upon', maxTokens: 4, temperature: 0 });
        } finally {
          await rt.close();
        }
      } catch (err) {
        if (!(err instanceof KilnError)) throw new Error(`iteration ${i} (${kind}): a non-KilnError escaped: ${(err as Error).stack}`);
        outcome = err.name;
      }
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      rmSync(path);
    }
    expect([...outcomes.values()].reduce((a, b) => a + b, 0)).toBe(ITERATIONS);
    expect(outcomes.size).toBeGreaterThan(3);
  });
});
