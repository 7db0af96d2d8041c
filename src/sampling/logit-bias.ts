// Logit bias: fixed amounts added to chosen tokens' logits (OpenAI `logit_bias`); -Infinity bans.
import { InvalidArgumentError } from '../errors.js';

/** A logit bias compiled once per request so applying it allocates nothing. */
export interface LogitBiasTable {
  readonly ids: Int32Array;
  readonly values: Float32Array;
}

/** Compiles `{ tokenId: bias }`. Keys and values must already be validated (sampling-options). */
export function toLogitBiasTable(bias: Record<number, number>): LogitBiasTable {
  const entries = Object.entries(bias);
  const ids = new Int32Array(entries.length);
  const values = new Float32Array(entries.length);
  entries.forEach(([id, value], i) => {
    ids[i] = Number(id);
    values[i] = value;
  });
  return { ids, values };
}

/** Adds the bias to `logits` in place. */
export function logitBias(logits: Float32Array, table: LogitBiasTable): void {
  for (let i = 0; i < table.ids.length; i++) {
    const id = table.ids[i];
    if (id >= logits.length) {
      throw new InvalidArgumentError(
        `logitBias names token ${id}, but the vocabulary has ${logits.length} tokens (ids 0..${logits.length - 1}).`,
        'logitBias',
      );
    }
    logits[id] += table.values[i];
  }
}
