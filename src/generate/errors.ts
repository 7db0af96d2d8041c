// Errors a single generation request can raise.
import { KilnError } from '../errors.js';

export class ContextLengthExceededError extends KilnError {
  readonly code = 'context_length_exceeded';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  /**
   * `atLeast`: tokenizing stopped once the prompt was known not to fit, so it has at least this
   * many tokens. `chars`: the prompt was refused by its length in characters, before tokenizing.
   */
  constructor(readonly promptTokens: number, readonly contextSize: number, opts: { atLeast?: boolean; chars?: number } = {}) {
    super(
      opts.chars !== undefined
        ? `The prompt has ${opts.chars} characters, which is more than ${promptTokens} tokens, but the context holds ${contextSize}. Shorten the prompt or load the model with a larger contextSize.`
        : `The prompt has ${opts.atLeast ? 'more than ' : ''}${promptTokens} tokens but the context holds ${contextSize}. Shorten the prompt or load the model with a larger contextSize.`,
    );
  }
}

/**
 * Refuses, before any tokenizing, text that cannot fit the context: no token stands for more than
 * `maxTokenChars` characters, so `chars` characters are at least chars / maxTokenChars tokens.
 * `text` is a string or a JSON-like value whose string values are counted (a template may leave
 * keys out, never a message's text).
 */
export function checkPromptChars(text: unknown, contextSize: number, maxTokenChars: number): void {
  const chars = countChars(text);
  const minTokens = Math.ceil(chars / maxTokenChars);
  if (minTokens > contextSize) throw new ContextLengthExceededError(minTokens, contextSize, { chars });
}

function countChars(value: unknown): number {
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') n += v.length;
    else if (v !== null && typeof v === 'object') {
      for (const child of Object.values(v)) stack.push(child);
    }
  }
  return n;
}
