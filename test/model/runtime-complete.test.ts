// complete() behaviour on a real model: stop strings, aborts, limits, token prompts, typed errors.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContextLengthExceededError, InvalidArgumentError, ModelFileNotFoundError, Runtime, UnsupportedArchitectureError } from '../../src/index.js';
import { writeGguf } from '../../src/gguf/writer.js';
import { GgufValueType } from '../../src/gguf/types.js';
import { MODELS, REFERENCE } from '../helpers/paths.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const greedy = (JSON.parse(readFileSync(`${REFERENCE}/stories260K.once-upon-a-time.llamacpp.json`, 'utf8')) as { greedy_text: string }).greedy_text;
let rt: Runtime;
beforeAll(async () => {
  rt = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, threads: 1, contextSize: 128, slots: 2 });
});
afterAll(() => rt.close());

describe('Runtime.complete', () => {
  it('stops at a stop string, which is not emitted, and holds back its prefix', async () => {
    const pieces: string[] = [];
    const r = await rt.complete({ prompt: 'Once upon a time', maxTokens: 100, temperature: 0, stop: ['little girl', 'dragon'], onToken: (t) => pieces.push(t) });
    expect(r.text).toBe(', there was a ');
    expect(r.finishReason).toBe('stop');
    expect(r.stopSequence).toBe('little girl');
    expect(pieces.join('')).toBe(r.text);
    expect(pieces.some((p) => p.includes('little'))).toBe(false);
  });

  it('finishes with length at maxTokens and at the end of the context', async () => {
    const r = await rt.complete({ prompt: 'Once upon a time', maxTokens: 3, temperature: 0 });
    expect(r.tokens).toHaveLength(3);
    expect(r.finishReason).toBe('length');
    expect(r.stopSequence).toBeNull();
    const full = await rt.complete({ prompt: 'Once upon a time', maxTokens: 1000, temperature: 0 });
    expect(full.finishReason).toBe('length');
    expect(full.usage.promptTokens + full.usage.completionTokens).toBe(128);
    expect(greedy.startsWith(full.text.slice(0, 40))).toBe(true);
  });

  it('aborts between decode steps with finishReason abort', async () => {
    const ctrl = new AbortController();
    let n = 0;
    const r = await rt.complete({ prompt: 'Once upon a time', maxTokens: 100, temperature: 0, signal: ctrl.signal, onToken: () => { if (++n === 5) ctrl.abort(); } });
    expect(r.finishReason).toBe('abort');
    expect(r.tokens.length).toBeLessThanOrEqual(6);
    expect(greedy.startsWith(r.text)).toBe(true);
  });

  it('accepts token ids and reuses the cached prefix', async () => {
    const ids = rt.tokenize('Once upon a time, there was');
    const a = await rt.complete({ prompt: ids, maxTokens: 5, temperature: 0 });
    const seen: string[] = [];
    const b = await rt.complete({
      prompt: ids, maxTokens: 5, temperature: 0,
      onStart: (s) => seen.push(`start ${s.promptTokens} ${s.cachedTokens}`), onToken: () => seen.push('text'),
    });
    expect(b.text).toBe(a.text);
    expect(b.usage.cachedTokens).toBe(ids.length - 1);
    expect(seen[0]).toBe(`start ${ids.length} ${ids.length - 1}`);
    expect(seen.slice(1).every((e) => e === 'text')).toBe(true);
    expect(b.timings.prefillTokens).toBe(1);
  });

  it('runs concurrent requests on separate slots with the same greedy text', async () => {
    const [x, y] = await Promise.all([
      rt.complete({ prompt: 'Once upon a time', maxTokens: 30, temperature: 0 }),
      rt.complete({ prompt: 'Once upon a time', maxTokens: 30, temperature: 0 }),
    ]);
    expect(x.text).toBe(y.text);
    expect(greedy.startsWith(x.text)).toBe(true);
  });

  it('rejects bad requests with typed errors', async () => {
    await expect(rt.complete({ prompt: 'x'.repeat(2000), maxTokens: 1 })).rejects.toBeInstanceOf(ContextLengthExceededError);
    await expect(rt.complete({ prompt: [1, 99999], maxTokens: 1 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(rt.complete({ prompt: 'a', maxTokens: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(rt.complete({ prompt: 'a', temperature: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(rt.complete({ prompt: 'a', stop: [''] })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});

describe('Runtime.load errors', () => {
  it('names a missing file and an unsupported architecture', async () => {
    await expect(Runtime.load({ model: '/nonexistent/model.gguf' })).rejects.toBeInstanceOf(ModelFileNotFoundError);
    const dir = mkdtempSync(join(tmpdir(), 'kiln-arch-'));
    const path = join(dir, 'gpt.gguf');
    writeFileSync(path, writeGguf({ metadata: [{ key: 'general.architecture', type: GgufValueType.STRING, value: 'gptneox' }] }));
    await expect(Runtime.load({ model: path })).rejects.toThrow(UnsupportedArchitectureError);
    await expect(Runtime.load({ model: path })).rejects.toThrow(/gptneox/);
  });
});
