// Builds a model's tokenizer from its GGUF file: a full model or a vocabulary-only file.
import { readFileSync, statSync } from 'node:fs';
import { GgufError, ModelFileNotFoundError } from '../gguf/errors.js';
import { parseGguf } from '../gguf/reader.js';
import type { GgufFile } from '../gguf/types.js';
import { createTokenizer } from './create-tokenizer.js';
import type { Tokenizer } from './tokenizer.js';
import { vocabularyFromGguf } from './vocabulary-from-gguf.js';

export function tokenizerFromGguf(file: GgufFile): Tokenizer {
  return createTokenizer(vocabularyFromGguf(file));
}

/**
 * Reads the tokenizer of the GGUF file at `path`. The whole file is read, so this is meant for
 * vocabulary-only files and tools; a loaded model passes its parsed file to tokenizerFromGguf.
 */
export function loadTokenizer(path: string): Tokenizer {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) throw new ModelFileNotFoundError(path, 'does not exist');
  if (!stat.isFile()) throw new ModelFileNotFoundError(path, 'is not a regular file');
  try {
    return tokenizerFromGguf(parseGguf(readFileSync(path)));
  } catch (err) {
    if (err instanceof GgufError) err.message = `${path}: ${err.message}`;
    throw err;
  }
}
