// encodeAsync: the same ids as Hugging Face's tokenizer on large and pathological texts (long
// single words that merge in their own arrays and pause mid-word), with turns of the event loop
// in between; and the BPE word cache's memory bound, in bytes and in what it keeps alive.
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { BpeTokenizer, MAX_CACHED_WORD_CHARS, MAX_WORD_CACHE_BYTES } from '../../../src/tokenizer/bpe-tokenizer.js';
import { loadSentencePieceTokenizer, tokenizerFromGguf } from '../../../src/tokenizer/load-tokenizer.js';
import type { Tokenizer } from '../../../src/tokenizer/tokenizer.js';
import { vocabularyFromSentencePiece } from '../../../src/tokenizer/vocabulary-from-sentencepiece.js';
import { mixedCorpus } from '../../fixtures/tokenizer/corpus.js';
import { ggufFromTokenizerJson, hfReference, lenmlTokenizer } from '../../fixtures/tokenizer/hf-vocabulary.js';
import { llamaConverterJson } from '../../fixtures/tokenizer/llama-converter.js';
import { join } from 'node:path';
import { MODELS } from '../../helpers/paths.js';
import { turnsDuring } from '../../helpers/event-loop.js';

interface Family {
  name: string;
  kiln: Tokenizer;
  reference: (text: string) => number[];
}

function families(): Family[] {
  const out: Family[] = [];
  for (const [family, pre, bos, eos] of [['llama3', 'llama-bpe', '<|begin_of_text|>', '<|end_of_text|>'], ['qwen3', 'qwen2', null, '<|im_end|>']] as const) {
    const { json, config } = lenmlTokenizer(family);
    const ref = hfReference(json, config, false);
    out.push({
      name: family,
      kiln: tokenizerFromGguf(ggufFromTokenizerJson(json, { pre, addBos: false, bos, eos })),
      reference: (s) => ref.encode(s, { add_special_tokens: false }).ids,
    });
  }
  const path = join(MODELS, 'llama2-tokenizer.model');
  const vocab = vocabularyFromSentencePiece(readFileSync(path));
  const pieces = vocab.tokens.map((piece, id) => ({ piece, score: vocab.scores![id]!, type: vocab.tokenTypes![id]! }));
  const ref = new HfTokenizer({ ...llamaConverterJson(pieces), added_tokens: [] }, {});
  out.push({ name: 'llama2', kiln: loadSentencePieceTokenizer(path), reference: (s) => ref.encode(s, { add_special_tokens: false }).ids });
  return out;
}

describe.each(families())('encodeAsync on $name', ({ kiln, reference }) => {
  const texts: Array<[string, string]> = [
    ['a 300 KB mixed corpus', mixedCorpus(300_000).join('\n')],
    ['one 40,000-letter word', 'a'.repeat(40_000)],
    ['one 20,000-character word of two letters', 'xq'.repeat(10_000)],
    ['long words among short ones', `${'lorem ipsum '.repeat(500)}${'Zz'.repeat(3000)} ${'9'.repeat(5000)} tail`],
  ];

  it.each(texts)('gives the reference ids for %s, letting the event loop run', async (_, text) => {
    expect(await kiln.encodeAsync(text, { addSpecial: false })).toEqual(reference(text));
    // With no time to work between pauses, every pause point is a turn of the event loop: long
    // words pause between merges, long texts between words.
    const { value, turns } = await turnsDuring(kiln.encodeAsync(text, { addSpecial: false, sliceMs: 0 }));
    expect(value).toEqual(reference(text));
    expect(turns).toBeGreaterThan(2);
  });

  it('stops once the ids outnumber maxTokens, with a start of the encoding', async () => {
    const text = mixedCorpus(100_000).join('\n');
    const all = kiln.encode(text, { addSpecial: false });
    const some = await kiln.encodeAsync(text, { addSpecial: false, maxTokens: 1000 });
    expect(some.length).toBeGreaterThan(1000);
    expect(some.length).toBeLessThan(all.length / 2);
    expect(some).toEqual(all.slice(0, some.length));
  });

  it('keeps each token within maxTokenChars characters', () => {
    const text = mixedCorpus(50_000).join('\n');
    const ids = kiln.encode(text, { addSpecial: false });
    expect(text.length / ids.length).toBeLessThanOrEqual(kiln.maxTokenChars);
    for (const id of ids) expect(kiln.tokenToPiece(id).length).toBeLessThanOrEqual(kiln.maxTokenChars);
  });

  it('gives encode() the same ids when encodings interleave', async () => {
    const a = `${'b'.repeat(30_000)} ${mixedCorpus(20_000, 7).join(' ')}`;
    const b = `${mixedCorpus(20_000, 8).join(' ')} ${'cd'.repeat(15_000)}`;
    const [ia, ib] = await Promise.all([kiln.encodeAsync(a), kiln.encodeAsync(b)]);
    expect(ia).toEqual(kiln.encode(a));
    expect(ib).toEqual(kiln.encode(b));
  });
});

describe('the BPE word cache', () => {
  const { json } = lenmlTokenizer('qwen3');
  const gguf = ggufFromTokenizerJson(json, { pre: 'qwen2', addBos: false, bos: null, eos: '<|im_end|>' });

  it('stays within its byte bound however many distinct words come', () => {
    const tok = tokenizerFromGguf(gguf) as BpeTokenizer;
    let peak = 0;
    for (let i = 0; i < 400; i++) {
      // 200 distinct words of 200 letters each.
      const words = Array.from({ length: 200 }, (_, k) => `${String.fromCharCode(97 + (k % 26))}${(i * 200 + k).toString(36)}`.padEnd(MAX_CACHED_WORD_CHARS - 56, 'q'));
      tok.encode(words.join(' '));
      peak = Math.max(peak, tok.wordCacheBytes);
    }
    expect(peak).toBeGreaterThan(MAX_WORD_CACHE_BYTES / 2);
    expect(peak).toBeLessThanOrEqual(MAX_WORD_CACHE_BYTES);
  });

  it('does not keep the texts its words came from alive', () => {
    setFlagsFromString('--expose_gc');
    const gc = runInNewContext('gc') as () => void;
    const tok = tokenizerFromGguf(gguf);
    const filler = ' ab'.repeat(1 << 17);
    tok.encode(filler);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 50; i++) {
      // A fresh text of 0.8 M characters (as many bytes) holding one new cacheable word.
      const text = `${filler} ${'w'.repeat(100)}${i.toString(36)}${filler}`;
      tok.encode(text);
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // 50 texts kept alive by their cached words would be 40 MB.
    expect(grown).toBeLessThan(10 << 20);
  });
});
