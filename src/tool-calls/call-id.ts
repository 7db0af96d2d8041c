// Tool-call ids. kiln mints `call_` + 24 random alphanumerics, as OpenAI does; for mistral it mints
// 9 alphanumerics, the only shape Mistral's templates accept when the call is replayed. A Mistral id
// the model wrote is used when it has that shape and is new in the reply.
import { randomBytes } from 'node:crypto';
import type { ToolCallFormat } from './types.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const MISTRAL_ID = /^[A-Za-z0-9]{9}$/;

let pool = Buffer.alloc(0);
let poolAt = 0;

function randomAlphanumerics(n: number): string {
  let out = '';
  while (out.length < n) {
    if (poolAt >= pool.length) {
      pool = randomBytes(4096);
      poolAt = 0;
    }
    const b = pool[poolAt++]!;
    // 248 = 4 * 62: rejecting the rest keeps every character equally likely.
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

export function mintCallId(format: ToolCallFormat): string {
  return format === 'mistral' ? randomAlphanumerics(9) : `call_${randomAlphanumerics(24)}`;
}

export function isMistralCallId(id: string): boolean {
  return MISTRAL_ID.test(id);
}
