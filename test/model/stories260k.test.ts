// stories260K at temperature 0 must reproduce llama2.c's text byte for byte (200 tokens), through
// the API and through `kiln run`.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Runtime } from '../../src/index.js';
import { MODELS, REFERENCE, repoRoot } from '../helpers/paths.js';

const llama2c = readFileSync(`${REFERENCE}/stories260K.once-upon-a-time.llama2c.txt`, 'utf8');
const llamacpp = JSON.parse(readFileSync(`${REFERENCE}/stories260K.once-upon-a-time.llamacpp.json`, 'utf8')) as {
  tokens: number[];
  greedy_tokens: number[];
  greedy_text: string;
};
const PROMPT = 'Once upon a time';

describe('stories260K greedy output', () => {
  it('complete() reproduces llama2.c for 200 tokens', async () => {
    const rt = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, threads: 2 });
    try {
      expect(rt.tokenize(PROMPT)).toEqual(llamacpp.tokens);
      const pieces: string[] = [];
      const r = await rt.complete({ prompt: PROMPT, maxTokens: 200, temperature: 0, onToken: (t) => pieces.push(t) });
      expect(r.tokens).toEqual(llamacpp.greedy_tokens);
      expect(r.text).toBe(llamacpp.greedy_text);
      expect(llama2c.startsWith(PROMPT + r.text)).toBe(true);
      expect(pieces.join('')).toBe(r.text);
      expect(r.finishReason).toBe('length');
      expect(r.usage).toEqual({ promptTokens: 5, completionTokens: 200, cachedTokens: 0 });
    } finally {
      await rt.close();
    }
  });

  it('is identical across thread counts and with a reused prefix', async () => {
    const texts: string[] = [];
    for (const threads of [1, 2]) {
      const rt = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, threads });
      try {
        texts.push((await rt.complete({ prompt: PROMPT, maxTokens: 60, temperature: 0.9, seed: 42 })).text);
        const again = await rt.complete({ prompt: PROMPT, maxTokens: 60, temperature: 0.9, seed: 42 });
        expect(again.usage.cachedTokens).toBe(4);
        texts.push(again.text);
      } finally {
        await rt.close();
      }
    }
    expect(new Set(texts).size).toBe(1);
  });

  it('`kiln run` writes exactly the continuation to stdout', () => {
    const out = execFileSync(
      process.execPath,
      [`${repoRoot}/bin/kiln.js`, 'run', '--model', `${MODELS}/stories260K.gguf`, '--temperature', '0', '--max-tokens', '200', '--threads', '2', PROMPT],
      { encoding: 'utf8' },
    );
    expect(out).toBe(llamacpp.greedy_text);
    expect(llama2c.startsWith(PROMPT + out)).toBe(true);
  });
});
