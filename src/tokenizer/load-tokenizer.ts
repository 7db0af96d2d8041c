// Builds a tokenizer from a model file: a GGUF (full model or vocabulary-only) or a SentencePiece .model.
import { readFileSync } from 'node:fs';
import { assertModelFile, openGguf } from '../gguf/open-gguf.js';
import type { GgufFile } from '../gguf/types.js';
import { createTokenizer } from './create-tokenizer.js';
import type { Tokenizer } from './tokenizer.js';
import { vocabularyFromGguf } from './vocabulary-from-gguf.js';
import { vocabularyFromSentencePiece } from './vocabulary-from-sentencepiece.js';

export function tokenizerFromGguf(file: GgufFile): Tokenizer {
  return createTokenizer(vocabularyFromGguf(file));
}

/**
 * Reads the tokenizer of the GGUF file at `path` (a model or a vocabulary-only file). The file is
 * memory-mapped, so only the pages holding the header and vocabulary are read.
 */
export function loadTokenizer(path: string): Tokenizer {
  return tokenizerFromGguf(openGguf(path).file);
}

/** Reads a SentencePiece `.model` file (Llama 2, Mistral) as a tokenizer. */
export function loadSentencePieceTokenizer(path: string): Tokenizer {
  assertModelFile(path);
  return createTokenizer(vocabularyFromSentencePiece(readFileSync(path)));
}
