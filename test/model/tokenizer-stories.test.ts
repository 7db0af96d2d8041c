// stories260K's SentencePiece vocabulary against llama.cpp's and llama2.c's recorded outputs.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../src/tokenizer/load-tokenizer.js';

const MODELS = new URL('../../../shared/models/', import.meta.url);
const reference = JSON.parse(
  readFileSync(new URL('reference/stories260K.once-upon-a-time.llamacpp.json', MODELS), 'utf8'),
) as { tokens: number[]; greedy_tokens: number[]; greedy_text: string };
const llama2c = readFileSync(new URL('reference/stories260K.once-upon-a-time.llama2c.txt', MODELS), 'utf8');

describe('stories260K tokenizer', () => {
  const tok = loadTokenizer(new URL('stories260K.gguf', MODELS).pathname);

  it('encodes the prompt with BOS as llama.cpp does', () => {
    expect(tok.encode('Once upon a time')).toEqual(reference.tokens);
  });

  it('streams the greedy continuation to llama.cpp\'s text', () => {
    const d = tok.createDecoder();
    let text = '';
    for (const id of reference.greedy_tokens) text += d.push(id);
    text += d.flush();
    expect(text).toBe(reference.greedy_text);
  });

  it('decodes prompt and continuation to llama2.c\'s output', () => {
    const all = [...reference.tokens, ...reference.greedy_tokens];
    const text = tok.decode(all, { skipSpecial: true });
    expect(llama2c.startsWith(text)).toBe(true);
    expect(text).toBe(`Once upon a time${reference.greedy_text}`);
  });

  it('knows its special tokens', () => {
    expect(tok.bosId).toBe(1);
    expect(tok.eosId).toBe(2);
    expect(tok.addBos).toBe(true);
    expect(tok.isEog(2)).toBe(true);
    expect(tok.isControl(1)).toBe(true);
    expect(tok.isEog(432)).toBe(false);
  });
});
