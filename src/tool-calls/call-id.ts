// Tool-call ids. kiln mints `call_` + 24 random alphanumerics, as OpenAI does; for mistral it mints
// 9 alphanumerics, the only shape Mistral's templates accept when the call is replayed. A Mistral id
// the model wrote is used when it has that shape and is new in the reply.
import { randomFillSync } from 'node:crypto';
import type { ToolCallFormat } from './types.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const MISTRAL_ID = /^[A-Za-z0-9]{9}$/;

// Two characters per random 16-bit draw, from a table of all 62 * 62 pairs: ids are minted per
// call, and a reply may hold thousands.
const PAIRS: string[] = [];
for (const a of ALPHABET) for (const b of ALPHABET) PAIRS.push(a + b);
/** 16 * 3844: draws at or above it are rejected, so every pair is equally likely. */
const LIMIT = 61504;
const pool = new Uint16Array(2048);
let poolAt = pool.length;

function randomPair(): string {
  for (;;) {
    if (poolAt === pool.length) {
      randomFillSync(pool);
      poolAt = 0;
    }
    const v = pool[poolAt++]!;
    if (v < LIMIT) return PAIRS[v % 3844]!;
  }
}

function randomAlphanumerics(n: number): string {
  let s = '';
  for (let i = 0; i + 1 < n; i += 2) s += randomPair();
  return n % 2 === 1 ? s + randomPair()[0]! : s;
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
