// API-key check for every route but /health: `Authorization: Bearer KEY` (OpenAI) or
// `x-api-key: KEY` (Anthropic). Keys are compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { AuthenticationError } from './errors.js';

export function checkApiKey(expected: string, headers: IncomingHttpHeaders): void {
  const auth = headers.authorization;
  const bearer = typeof auth === 'string' && /^bearer /i.test(auth) ? auth.slice(7).trim() : undefined;
  const xKey = typeof headers['x-api-key'] === 'string' ? headers['x-api-key'] : undefined;
  const given = bearer ?? xKey;
  if (given === undefined) throw new AuthenticationError(false);
  if (!sameKey(given, expected)) throw new AuthenticationError(true);
}

function sameKey(a: string, b: string): boolean {
  // Hashing first makes the comparison constant-time regardless of length.
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
