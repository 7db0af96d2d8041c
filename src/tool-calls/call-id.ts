// Tool-call ids. kiln mints `call_` + 24 random alphanumerics, as OpenAI does; for mistral it mints
// 9 alphanumerics, the only shape Mistral's templates accept when the call is replayed. A Mistral id
// the model wrote is used when it has that shape and is new in the reply.
import { randomFillSync } from 'node:crypto';
import type { ToolCallFormat } from './types.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const MISTRAL_ID = /^[A-Za-z0-9]{9}$/;

const pool = new Uint8Array(4096);
let poolAt = pool.length;
const codes: number[] = [];

function randomAlphanumerics(n: number): string {
  codes.length = 0;
  while (codes.length < n) {
    if (poolAt === pool.length) {
      randomFillSync(pool);
      poolAt = 0;
    }
    const b = pool[poolAt++]!;
    // 248 = 4 * 62: rejecting the rest keeps every character equally likely.
    if (b < 248) codes.push(ALPHABET.charCodeAt(b % 62));
  }
  return String.fromCharCode(...codes);
}

export function mintCallId(format: ToolCallFormat): string {
  return format === 'mistral' ? randomAlphanumerics(9) : `call_${randomAlphanumerics(24)}`;
}

export function isMistralCallId(id: string): boolean {
  return id.length === 9 && MISTRAL_ID.test(id);
}

/**
 * Stand-in ids for a parse whose minted ids are never shown (the streamer's final parse): unique,
 * cheap, and impossible for a model to write. reconcileWithFinal mints a real id if one goes out.
 */
export function placeholderIds(): (format: ToolCallFormat) => string {
  let n = 0;
  return () => `\u0000${n++}`;
}

export function isPlaceholderId(id: string): boolean {
  return id.charCodeAt(0) === 0;
}
