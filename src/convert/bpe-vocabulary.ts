// The token list, token types and merges of a byte-level BPE tokenizer.json, as llama.cpp's
// converter writes them (get_vocab_base and SpecialVocab in convert_hf_to_gguf.py / gguf-py).
import { InvalidVocabularyError } from '../tokenizer/errors.js';
import { TokenType } from '../tokenizer/token-type.js';
import type { HfAddedToken, HfTokenizerJson } from './tokenizer-json.js';

export interface BpeVocabulary {
  tokens: string[];
  tokenTypes: Int32Array;
  /** "left right", highest priority first. */
  merges: string[];
}

/**
 * Added tokens that look like markers count as control tokens even when tokenizer.json does not
 * call them special (the script's does_token_look_special).
 */
export function looksSpecial(text: string): boolean {
  return ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(text)
    || (text.startsWith('<|') && text.endsWith('|>'))
    || (text.startsWith('<｜') && text.endsWith('｜>'))
    || (text.startsWith('<unused') && text.endsWith('>'));
}

/** Whether llama.cpp's converter writes this added token as CONTROL (else USER_DEFINED). */
export function isControlAdded(t: HfAddedToken): boolean {
  return t.special || looksSpecial(t.content);
}

/**
 * `vocabSize` (config.json's vocab_size) pads the list with unused `[PAD<id>]` tokens up to the
 * embedding's rows; null sizes it to the largest id.
 */
export function bpeVocabulary(json: HfTokenizerJson, vocabSize: number | null): BpeVocabulary {
  let maxId = -1;
  for (const id of Object.values(json.model.vocab)) maxId = Math.max(maxId, id);
  for (const t of json.added_tokens) maxId = Math.max(maxId, t.id);
  const n = vocabSize ?? maxId + 1;
  if (maxId >= n) throw new InvalidVocabularyError(`tokenizer.json has token id ${maxId}, outside the ${n} tokens of vocab_size in config.json`);

  const tokens = new Array<string>(n);
  const tokenTypes = new Int32Array(n);
  for (const [text, id] of Object.entries(json.model.vocab)) {
    tokens[id] = text;
    tokenTypes[id] = TokenType.NORMAL;
  }
  for (const t of json.added_tokens) {
    if (isControlAdded(t)) {
      tokens[t.id] = t.content;
      tokenTypes[t.id] = TokenType.CONTROL;
    } else {
      // llama.cpp matches user-defined tokens in raw text, so their SentencePiece spaces are spaces.
      tokens[t.id] = t.content.replaceAll('▁', ' ');
      tokenTypes[t.id] = TokenType.USER_DEFINED;
    }
  }
  for (let id = 0; id < n; id++) {
    if (tokens[id] === undefined) {
      tokens[id] = `[PAD${id}]`;
      tokenTypes[id] = TokenType.UNUSED;
    }
  }
  return { tokens, tokenTypes, merges: json.model.merges.map(mergeString) };
}

/**
 * transformers >= 4.45 writes merges as pairs so that parts may hold spaces; GGUF keeps the
 * "left right" strings, with a space inside a part written as U+0120 as gguf-py does.
 */
function mergeString(m: string | [string, string]): string {
  if (typeof m === 'string') return m;
  return m.map((part) => part.replaceAll(' ', '\u0120')).join(' ');
}
