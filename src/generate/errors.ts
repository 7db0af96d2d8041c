// Errors a single generation request can raise.
import { KilnError } from '../errors.js';

export class ContextLengthExceededError extends KilnError {
  readonly code = 'context_length_exceeded';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  constructor(readonly promptTokens: number, readonly contextSize: number) {
    super(`The prompt has ${promptTokens} tokens but the context holds ${contextSize}. Shorten the prompt or load the model with a larger contextSize.`);
  }
}
