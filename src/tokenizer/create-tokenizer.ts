// Picks the tokenizer implementation a vocabulary calls for.
import { BpeTokenizer } from './bpe-tokenizer.js';
import { SpmTokenizer } from './spm-tokenizer.js';
import type { Tokenizer } from './tokenizer.js';
import type { Vocabulary } from './vocabulary.js';

export function createTokenizer(vocab: Vocabulary): Tokenizer {
  return vocab.model === 'llama' ? new SpmTokenizer(vocab) : new BpeTokenizer(vocab);
}
