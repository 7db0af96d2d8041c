// Reasoning text carried by the client in an opaque field: the `signature` of an Anthropic thinking
// block and the `encrypted_content` of a Responses reasoning item. Both APIs use that field to give
// the server back the model's reasoning when the client shows or keeps less of it (thinking shown
// as "omitted", a stateless client that keeps only the summary), so kiln puts the reasoning text
// itself there: whatever a client drops, the turn comes back as the model wrote it, and exact
// replay matches it. It is encoded, not encrypted: it holds only what the client already received.
// A value kiln did not issue (another server's signature) is not kiln's business: unseal returns
// null and the field is ignored.
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/** Leads every sealed value, so another server's signature is never mistaken for kiln's. */
const MAGIC = Buffer.from('kiln\u0001', 'latin1');
/** Reasoning longer than this does not come from one reply of any model kiln runs. */
const MAX_UNSEALED_BYTES = 64 * 1024 * 1024;

export function sealReasoning(text: string): string {
  return Buffer.concat([MAGIC, deflateRawSync(Buffer.from(text, 'utf8'))]).toString('base64');
}

/** The reasoning text a kiln-sealed value holds, or null for any other value. */
export function unsealReasoning(value: string): string | null {
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length < MAGIC.length || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  try {
    return inflateRawSync(bytes.subarray(MAGIC.length), { maxOutputLength: MAX_UNSEALED_BYTES }).toString('utf8');
  } catch {
    return null;
  }
}
