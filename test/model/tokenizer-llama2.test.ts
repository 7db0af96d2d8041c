// Llama 2's real SentencePiece model (../shared/models/llama2-tokenizer.model) and the 32000-token
// vocabulary in llama-2-tiny-random.gguf, against Hugging Face's tokenizer on a LlamaConverter
// tokenizer.json made from the same .model, over the shared corpus.
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseGguf } from '../../src/gguf/reader.js';
import { loadSentencePieceTokenizer, loadTokenizer } from '../../src/tokenizer/load-tokenizer.js';
import { vocabularyFromSentencePiece } from '../../src/tokenizer/vocabulary-from-sentencepiece.js';
import { expectAgreement, referenceRoundTrip } from '../fixtures/tokenizer/agreement.js';
import { tokenizerCorpus } from '../fixtures/tokenizer/corpus.js';
import { llamaConverterJson } from '../fixtures/tokenizer/llama-converter.js';

const MODELS = new URL('../../../shared/models/', import.meta.url);
const MODEL_PATH = new URL('llama2-tokenizer.model', MODELS).pathname;
const GGUF_PATH = new URL('llama-2-tiny-random.gguf', MODELS).pathname;
const corpus = tokenizerCorpus();


describe('Llama 2 SentencePiece', () => {
  const vocab = vocabularyFromSentencePiece(readFileSync(MODEL_PATH));
  const pieces = vocab.tokens.map((piece, id) => ({ piece, score: vocab.scores![id]!, type: vocab.tokenTypes![id]! }));
  const json = llamaConverterJson(pieces);
  const refAll = new HfTokenizer(json, {});
  // Llama 2 has no user-defined pieces, so user content sees no added token at all.
  const refUser = new HfTokenizer({ ...json, added_tokens: [] }, {});
  const fromModel = loadSentencePieceTokenizer(MODEL_PATH);
  const fromGguf = loadTokenizer(GGUF_PATH);

  it('reads the same pieces, scores and types from the .model as llama.cpp wrote to the GGUF', () => {
    const md = parseGguf(readFileSync(GGUF_PATH)).metadata;
    expect(vocab.tokens).toEqual(md.get('tokenizer.ggml.tokens'));
    expect(Array.from(vocab.scores!)).toEqual(Array.from(md.get('tokenizer.ggml.scores') as Float32Array));
    expect(Array.from(vocab.tokenTypes!)).toEqual(Array.from(md.get('tokenizer.ggml.token_type') as Int32Array));
    expect(vocab.tokens.some((t) => t.includes('\uFEFF'))).toBe(true);
    expect([vocab.bosId, vocab.eosId, vocab.unkId, vocab.addBos, vocab.addSpacePrefix]).toEqual([1, 2, 0, true, true]);
  });

  it.each([['the .model', fromModel], ['the GGUF', fromGguf]] as const)(
    'encodes user content from %s to the reference ids', (_, tok) => {
      expectAgreement(corpus, (s) => tok.encode(s, { addSpecial: false }), (s) => refUser.encode(s, { add_special_tokens: false }).ids);
    },
  );

  it('encodes template text with special tokens to the reference ids', () => {
    expectAgreement(corpus, (s) => fromModel.encode(s, { addSpecial: false, parseSpecial: true }),
      (s) => refAll.encode(s, { add_special_tokens: false }).ids);
  });

  it('adds BOS', () => {
    expect(fromModel.encode('Hello world')).toEqual([1, ...refUser.encode('Hello world', { add_special_tokens: false }).ids]);
  });

  it('decodes like the reference and round-trips', () => {
    expectAgreement(corpus, (s) => fromModel.decode(fromModel.encode(s, { addSpecial: false })), (s) => referenceRoundTrip(refUser, s));
    for (const s of corpus) {
      expect(fromModel.decode(fromModel.encode(s, { addSpecial: false }))).toBe(s);
      expect(fromModel.decode(fromModel.encode(s), { skipSpecial: true })).toBe(s);
    }
  });

  it('keeps the U+FEFF of a token when decoding', () => {
    const id = vocab.tokens.findIndex((t) => t.includes('\uFEFF'));
    expect(fromGguf.tokenToPiece(id)).toContain('\uFEFF');
  });
});
