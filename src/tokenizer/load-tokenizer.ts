// Builds a tokenizer from a model file: a GGUF (full model or vocabulary-only) or a SentencePiece .model.
import { readFileSync, statSync } from 'node:fs';
import { GgufError, ModelFileNotFoundError } from '../gguf/errors.js';
import { parseGguf } from '../gguf/reader.js';
import type { GgufFile } from '../gguf/types.js';
import { createTokenizer } from './create-tokenizer.js';
import type { Tokenizer } from './tokenizer.js';
import { vocabularyFromGguf } from './vocabulary-from-gguf.js';
import { vocabularyFromSentencePiece } from './vocabulary-from-sentencepiece.js';

export function tokenizerFromGguf(file: GgufFile): Tokenizer {
  return createTokenizer(vocabularyFromGguf(file));
}

/**
 * Reads the tokenizer of the GGUF file at `path`. The whole file is read, so this is meant for
 * vocabulary-only files and tools; a loaded model passes its parsed file to tokenizerFromGguf.
 */
export function loadTokenizer(path: string): Tokenizer {
  checkFile(path);
  try {
    return tokenizerFromGguf(parseGguf(readFileSync(path)));
  } catch (err) {
    if (err instanceof GgufError) err.message = `${path}: ${err.message}`;
    throw err;
  }
}

/** Reads a SentencePiece `.model` file (Llama 2, Mistral) as a tokenizer. */
export function loadSentencePieceTokenizer(path: string): Tokenizer {
  checkFile(path);
  return createTokenizer(vocabularyFromSentencePiece(readFileSync(path)));
}

function checkFile(path: string): void {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) throw new ModelFileNotFoundError(path, 'does not exist');
  if (!stat.isFile()) throw new ModelFileNotFoundError(path, 'is not a regular file');
}
