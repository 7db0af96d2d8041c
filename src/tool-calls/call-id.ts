// Tool-call ids. kiln mints `call_` + 24 random alphanumerics, as OpenAI does; for mistral it mints
// 9 alphanumerics, the only shape Mistral's templates accept when the call is replayed. A Mistral id
// the model wrote is used when it has that shape and is new in the reply.
import { randomFillSync } from 'node:crypto';
import type { ToolCallFormat } from './types.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const MISTRAL_ID = /^[A-Za-z0-9]{9}$/;

const CODES = Array.from(ALPHABET, (ch) => ch.charCodeAt(0));
/** 4 * 62: bytes at or above it are rejected, so every character is equally likely. */
const LIMIT = 248;
const pool = new Uint8Array(4096);
let poolAt = pool.length;
// Reused for every id: ids are minted per call, and a reply may hold thousands of calls.
const codes9 = new Array<number>(9).fill(0);
const codes29 = Array.from('call_', (ch) => ch.charCodeAt(0)).concat(new Array<number>(24).fill(0));

/** Fills codes[from..] with random alphanumerics and returns them as one flat string. */
function randomId(codes: number[], from: number): string {
  for (let i = from; i < codes.length; ) {
    if (poolAt === pool.length) {
      randomFillSync(pool);
      poolAt = 0;
    }
    const b = pool[poolAt++]!;
    if (b < LIMIT) codes[i++] = CODES[b % 62]!;
  }
  return String.fromCharCode.apply(null, codes);
}

export function mintCallId(format: ToolCallFormat): string {
  return format === 'mistral' ? randomId(codes9, 0) : randomId(codes29, 5);
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

/**
 * A minted id not in `used`. A caller's minter that keeps repeating itself (a constant, in a
 * replay check) gets a few tries and then its id as is: a duplicate id, never a hang.
 */
export function uniqueId(used: ReadonlySet<string>, mint: () => string): string {
  let id = mint();
  for (let k = 0; k < 8 && used.has(id); k++) id = mint();
  return id;
}
