// Reads the `tokenizer.ggml.*` metadata of a GGUF file into a Vocabulary, applying llama.cpp's
// defaults for keys a file leaves out.
import type { GgufFile, GgufValue } from '../gguf/types.js';
import { InvalidVocabularyError, UnsupportedTokenizerError } from './errors.js';
import type { Vocabulary } from './vocabulary.js';

const KEY = 'tokenizer.ggml.';

export function vocabularyFromGguf(file: GgufFile): Vocabulary {
  const md = file.metadata;
  const model = optString(md.get(KEY + 'model'), 'model');
  if (model === null) throw new InvalidVocabularyError(`the GGUF file has no ${KEY}model: it carries no tokenizer`);
  if (model !== 'llama' && model !== 'gpt2') {
    throw new UnsupportedTokenizerError(
      `tokenizer model "${model}" is not supported; kiln reads "llama" (SentencePiece) and "gpt2" (byte-level BPE)`,
    );
  }
  const tokens = md.get(KEY + 'tokens');
  if (!isStringArray(tokens)) throw new InvalidVocabularyError(`${KEY}tokens is missing or not an array of strings`);
  const scores = optNumbers(md.get(KEY + 'scores'), 'scores');
  const tokenTypes = optNumbers(md.get(KEY + 'token_type'), 'token_type');
  const mergesValue = md.get(KEY + 'merges');
  if (mergesValue !== undefined && !isStringArray(mergesValue)) {
    throw new InvalidVocabularyError(`${KEY}merges is not an array of strings`);
  }
  if (model === 'gpt2' && mergesValue === undefined) {
    throw new InvalidVocabularyError(`a "gpt2" tokenizer needs ${KEY}merges, which the file lacks`);
  }
  const pre = optString(md.get(KEY + 'pre'), 'pre');

  const spm = model === 'llama';
  // llama.cpp's defaults: SentencePiece adds BOS and a space prefix; Llama 3 and Tekken add BOS.
  const defaultBos = spm || pre === 'llama-bpe' || pre === 'llama3' || pre === 'llama-v3' || pre === 'tekken';
  const extraEogIds: number[] = [];
  for (const k of ['eot_token_id', 'eom_token_id', 'fim_pad_token_id', 'fim_rep_token_id', 'fim_sep_token_id']) {
    const id = optId(md.get(KEY + k), k);
    if (id !== null) extraEogIds.push(id);
  }
  return {
    model,
    pre,
    tokens,
    scores,
    tokenTypes,
    merges: mergesValue ?? null,
    bosId: optId(md.get(KEY + 'bos_token_id'), 'bos_token_id') ?? (spm ? 1 : null),
    eosId: optId(md.get(KEY + 'eos_token_id'), 'eos_token_id') ?? (spm ? 2 : null),
    unkId: optId(md.get(KEY + 'unknown_token_id'), 'unknown_token_id') ?? (spm ? 0 : null),
    padId: optId(md.get(KEY + 'padding_token_id'), 'padding_token_id'),
    extraEogIds,
    addBos: optBool(md.get(KEY + 'add_bos_token'), 'add_bos_token') ?? defaultBos,
    addEos: optBool(md.get(KEY + 'add_eos_token'), 'add_eos_token') ?? false,
    addSpacePrefix: optBool(md.get(KEY + 'add_space_prefix'), 'add_space_prefix') ?? spm,
  };
}

function isStringArray(v: GgufValue | undefined): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

function optString(v: GgufValue | undefined, key: string): string | null {
  if (v === undefined) return null;
  if (typeof v !== 'string') throw new InvalidVocabularyError(`${KEY}${key} should be a string`);
  return v;
}

function optBool(v: GgufValue | undefined, key: string): boolean | null {
  if (v === undefined) return null;
  if (typeof v !== 'boolean') throw new InvalidVocabularyError(`${KEY}${key} should be a bool`);
  return v;
}

function optId(v: GgufValue | undefined, key: string): number | null {
  if (v === undefined) return null;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new InvalidVocabularyError(`${KEY}${key} should be a non-negative integer`);
  }
  return n;
}

function optNumbers(v: GgufValue | undefined, key: string): ArrayLike<number> | null {
  if (v === undefined) return null;
  if (ArrayBuffer.isView(v) && !(v instanceof BigInt64Array) && !(v instanceof BigUint64Array)) {
    return v as ArrayLike<number>;
  }
  throw new InvalidVocabularyError(`${KEY}${key} should be an array of numbers`);
}
