// The token list of a SentencePiece tokenizer.model as llama.cpp's converter writes it
// (_create_vocab_sentencepiece): pieces, scores and types from the model, then the added tokens
// of added_tokens.json and tokenizer_config.json, padded to config.json's vocab_size.
import { TokenType } from '../tokenizer/token-type.js';
import { vocabularyFromSentencePiece } from '../tokenizer/vocabulary-from-sentencepiece.js';
import { looksSpecial } from './bpe-vocabulary.js';
import { isRecord } from './read-file.js';

export interface SpmVocabulary {
  tokens: string[];
  scores: Float32Array;
  tokenTypes: Int32Array;
  /** Special ids of the model's trainer spec: the fallback when no JSON file names them. */
  trainerIds: { bos: number | null; eos: number | null; unk: number | null; pad: number | null };
  /** The model's normalizer adds a leading space ("dummy prefix"). */
  addSpacePrefix: boolean;
}

export interface SpmExtras {
  /** config.json's vocab_size; null: the model's own size. */
  vocabSize: number | null;
  /** added_tokens.json: text -> id. */
  addedTokens: Record<string, unknown> | null;
  /** tokenizer_config.json's added_tokens_decoder: id -> { content, special }. */
  addedTokensDecoder: Record<string, unknown> | null;
}

export function spmVocabulary(model: Uint8Array, extras: SpmExtras): SpmVocabulary {
  const spm = vocabularyFromSentencePiece(model);
  const n = extras.vocabSize ?? spm.tokens.length;
  const tokens = Array.from({ length: n }, (_, i) => `[PAD${i}]`);
  const scores = new Float32Array(n).fill(-10000);
  const tokenTypes = new Int32Array(n).fill(TokenType.UNUSED);
  for (let id = 0; id < Math.min(n, spm.tokens.length); id++) {
    tokens[id] = spm.tokens[id]!;
    scores[id] = spm.scores![id]!;
    tokenTypes[id] = spm.tokenTypes![id]!;
  }
  for (const [text, id] of Object.entries(extras.addedTokens ?? {})) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= n) continue;
    tokens[id] = text;
    scores[id] = -1000;
    tokenTypes[id] = TokenType.USER_DEFINED;
  }
  for (const [key, entry] of Object.entries(extras.addedTokensDecoder ?? {})) {
    const id = Number(key);
    if (!Number.isInteger(id) || id < 0 || id >= n || !isRecord(entry) || typeof entry['content'] !== 'string') continue;
    const content = entry['content'];
    if (entry['special'] === true || looksSpecial(content)) {
      tokens[id] = content;
      tokenTypes[id] = TokenType.CONTROL;
    } else {
      tokens[id] = content.replaceAll('▁', ' ');
      tokenTypes[id] = TokenType.USER_DEFINED;
    }
    scores[id] = -1000;
  }
  const inRange = (id: number | null): number | null => (id !== null && id < n ? id : null);
  return {
    tokens,
    scores,
    tokenTypes,
    trainerIds: { bos: inRange(spm.bosId), eos: inRange(spm.eosId), unk: inRange(spm.unkId), pad: inRange(spm.padId) },
    addSpacePrefix: spm.addSpacePrefix,
  };
}
