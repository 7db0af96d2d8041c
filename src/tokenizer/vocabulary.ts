// The plain data a tokenizer is built from: what `tokenizer.ggml.*` holds in a GGUF file, or what
// a SentencePiece `.model` holds, with llama.cpp's defaults already applied.
export type TokenizerModel = 'llama' | 'gpt2';

export interface Vocabulary {
  model: TokenizerModel;
  /** Pre-tokenizer name (`tokenizer.ggml.pre`); byte-level BPE only. */
  pre: string | null;
  tokens: readonly string[];
  /** SentencePiece piece scores; merge priority for `llama`. */
  scores: ArrayLike<number> | null;
  /** `TokenType` per token; null means every token is NORMAL. */
  tokenTypes: ArrayLike<number> | null;
  /** BPE merges, each "left right", highest priority first. */
  merges: readonly string[] | null;
  bosId: number | null;
  eosId: number | null;
  unkId: number | null;
  padId: number | null;
  /** Ids besides EOS that end generation (EOT, EOM, ...). */
  extraEogIds: readonly number[];
  addBos: boolean;
  addEos: boolean;
  /** Prepend a space to text that starts a fragment (SentencePiece's dummy prefix). */
  addSpacePrefix: boolean;
}
