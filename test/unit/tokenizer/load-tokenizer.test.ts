// Loading tokenizers from GGUF metadata: vocabulary-only files, flags, token types, and the typed
// errors for what kiln does not support or cannot trust. The vocabularies here are tiny and built
// by hand; agreement with real tokenizers is in the oracle tests.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelFileNotFoundError } from '../../../src/gguf/errors.js';
import { GgufValueType, type GgufFile, type GgufValue } from '../../../src/gguf/types.js';
import { writeGguf } from '../../../src/gguf/writer.js';
import { InvalidVocabularyError, UnsupportedTokenizerError } from '../../../src/tokenizer/errors.js';
import { loadTokenizer, tokenizerFromGguf } from '../../../src/tokenizer/load-tokenizer.js';
import { TokenType } from '../../../src/tokenizer/token-type.js';

// A byte-level vocabulary: the 256 byte symbols, a few merges, a control and a user-defined token.
// GPT-2's bytes_to_unicode, written out from its definition.
const BYTE_ALPHABET: string[] = [];
for (let b = 0, extra = 0; b < 256; b++) {
  const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  BYTE_ALPHABET.push(String.fromCodePoint(printable ? b : 256 + extra++));
}
const MERGED = ['he', 'll', 'hell', 'hello', 'Ġw', 'Ġwo'];
const MERGES = ['h e', 'l l', 'he ll', 'hell o', 'Ġ w', 'Ġw o'];
const TOKENS = [...BYTE_ALPHABET, ...MERGED, '<|im_end|>', '<tool_call>'];
const TYPES = TOKENS.map((t) => (t === '<|im_end|>' ? TokenType.CONTROL : t === '<tool_call>' ? TokenType.USER_DEFINED : TokenType.NORMAL));
const id = (t: string) => TOKENS.indexOf(t);

function bpeFile(pre: string | null, extra: [string, GgufValue][] = []): GgufFile {
  const metadata = new Map<string, GgufValue>([
    ['tokenizer.ggml.model', 'gpt2'],
    ['tokenizer.ggml.tokens', TOKENS],
    ['tokenizer.ggml.token_type', Int32Array.from(TYPES)],
    ['tokenizer.ggml.merges', MERGES],
    ['tokenizer.ggml.eos_token_id', id('<|im_end|>')],
    ...extra,
  ]);
  if (pre !== null) metadata.set('tokenizer.ggml.pre', pre);
  return { version: 3, metadata, metadataTypes: new Map(), tensors: [], alignment: 32, dataOffset: 0, fileSize: 0 };
}

describe('loadTokenizer', () => {
  it('reads a vocabulary-only GGUF file (no tensors)', () => {
    const bytes = writeGguf({
      metadata: [
        { key: 'general.architecture', type: GgufValueType.STRING, value: 'qwen2' },
        { key: 'tokenizer.ggml.model', type: GgufValueType.STRING, value: 'gpt2' },
        { key: 'tokenizer.ggml.pre', type: GgufValueType.STRING, value: 'qwen2' },
        { key: 'tokenizer.ggml.tokens', type: GgufValueType.ARRAY, elementType: GgufValueType.STRING, value: TOKENS },
        { key: 'tokenizer.ggml.token_type', type: GgufValueType.ARRAY, elementType: GgufValueType.INT32, value: TYPES },
        { key: 'tokenizer.ggml.merges', type: GgufValueType.ARRAY, elementType: GgufValueType.STRING, value: MERGES },
        { key: 'tokenizer.ggml.eos_token_id', type: GgufValueType.UINT32, value: id('<|im_end|>') },
        { key: 'tokenizer.ggml.add_bos_token', type: GgufValueType.BOOL, value: false },
      ],
    });
    const path = join(mkdtempSync(join(tmpdir(), 'kiln-tok-')), 'vocab.gguf');
    writeFileSync(path, bytes);
    const tok = loadTokenizer(path);
    expect(tok.vocabSize).toBe(TOKENS.length);
    expect(tok.encode('hello world')).toEqual([id('hello'), id('Ġwo'), id('r'), id('l'), id('d')]);
    expect(tok.decode(tok.encode('hello world'))).toBe('hello world');
    expect(tok.isEog(id('<|im_end|>'))).toBe(true);
  });

  it('names a missing file', () => {
    expect(() => loadTokenizer('/nonexistent/vocab.gguf')).toThrow(ModelFileNotFoundError);
  });
});

describe('tokenizerFromGguf', () => {
  it('keeps control-token text as text unless parseSpecial, and always matches user-defined tokens', () => {
    const tok = tokenizerFromGguf(bpeFile('qwen2'));
    expect(tok.encode('<|im_end|>')).not.toContain(id('<|im_end|>'));
    expect(tok.encode('hello<|im_end|>', { parseSpecial: true })).toEqual([id('hello'), id('<|im_end|>')]);
    expect(tok.encode('<tool_call>hello')).toEqual([id('<tool_call>'), id('hello')]);
    expect(tok.isControl(id('<|im_end|>'))).toBe(true);
    expect(tok.decode([id('hello'), id('<|im_end|>')])).toBe('hello<|im_end|>');
    expect(tok.decode([id('hello'), id('<|im_end|>')], { skipSpecial: true })).toBe('hello');
  });

  it('normalizes to NFC for qwen2 only', () => {
    const qwen = tokenizerFromGguf(bpeFile('qwen2'));
    const gpt2 = tokenizerFromGguf(bpeFile('gpt-2'));
    expect(qwen.encode('e\u0301')).toEqual(qwen.encode('\u00e9'));
    expect(gpt2.encode('e\u0301')).not.toEqual(gpt2.encode('\u00e9'));
  });

  it('keeps U+FEFF through encode and decode', () => {
    const tok = tokenizerFromGguf(bpeFile('qwen2'));
    expect(tok.decode(tok.encode('\uFEFFhello'))).toBe('\uFEFFhello');
  });

  it('streams multi-byte characters split across byte tokens whole', () => {
    const tok = tokenizerFromGguf(bpeFile('qwen2'));
    const ids = tok.encode('😀!');
    expect(ids).toHaveLength(5);
    const d = tok.createDecoder();
    expect(ids.map((i) => d.push(i))).toEqual(['', '', '', '😀', '!']);
  });

  it('adds BOS and EOS as the flags say', () => {
    const tok = tokenizerFromGguf(bpeFile('qwen2', [
      ['tokenizer.ggml.bos_token_id', id('<tool_call>')],
      ['tokenizer.ggml.add_bos_token', true],
      ['tokenizer.ggml.add_eos_token', true],
    ]));
    expect(tok.encode('hello')).toEqual([id('<tool_call>'), id('hello'), id('<|im_end|>')]);
    expect(tok.encode('hello', { addSpecial: false })).toEqual([id('hello')]);
  });

  it('rejects an unknown pre-tokenizer by name', () => {
    expect(() => tokenizerFromGguf(bpeFile('deepseek-llm'))).toThrow(UnsupportedTokenizerError);
    expect(() => tokenizerFromGguf(bpeFile('deepseek-llm'))).toThrow(/"deepseek-llm"/);
    expect(() => tokenizerFromGguf(bpeFile(null))).toThrow(/no tokenizer.ggml.pre/);
  });

  it('rejects an unsupported tokenizer model and inconsistent metadata', () => {
    const bert = bpeFile('qwen2', [['tokenizer.ggml.model', 'bert']]);
    expect(() => tokenizerFromGguf(bert)).toThrow(UnsupportedTokenizerError);
    const short = bpeFile('qwen2', [['tokenizer.ggml.token_type', new Int32Array(3)]]);
    expect(() => tokenizerFromGguf(short)).toThrow(InvalidVocabularyError);
    const badEos = bpeFile('qwen2', [['tokenizer.ggml.eos_token_id', 1 << 20]]);
    expect(() => tokenizerFromGguf(badEos)).toThrow(InvalidVocabularyError);
    const noTokens = bpeFile('qwen2', [['tokenizer.ggml.tokens', new Int32Array(3)]]);
    expect(() => tokenizerFromGguf(noTokens)).toThrow(/tokens is missing or not an array of strings/);
  });
});
