// Typed errors raised while building a tokenizer from model metadata.
import { KilnError } from '../errors.js';

/** The model names a tokenizer kind or pre-tokenizer kiln does not implement. */
export class UnsupportedTokenizerError extends KilnError {
  readonly code = 'unsupported_tokenizer';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
}

/** The vocabulary metadata is missing, inconsistent, or out of bounds. */
export class InvalidVocabularyError extends KilnError {
  readonly code = 'invalid_vocabulary';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
}
