// Caps on what the incremental streamer holds or counts for one reply. Model output is untrusted:
// past any of these the streamer stops streaming incrementally and finish() sends the rest from the
// final parse, so a hostile reply costs memory and time in proportion to its length, never more.

/** A tool name, a `<function=…>` / `<parameter=…>` header or a Mistral name, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 256;
/** A model-written call id (real ones are 9 characters). */
export const MAX_ID_BYTES = 128;
/** Text held back while undecided: arguments written before the name, a typed qwen3_coder value. */
export const MAX_HELD_CHARS = 1 << 20;
/** Calls in one reply. */
export const MAX_CALLS = 1024;
/** Parameters in one qwen3_coder call. */
export const MAX_PARAMETERS = 1024;

/** True when `s` is longer than `max` bytes in UTF-8 (counted only when it could be). */
export function exceedsBytes(s: string, max: number): boolean {
  if (s.length * 3 <= max) return false;
  if (s.length > max) return true;
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A surrogate pair is 4 bytes: 2 for each half.
    bytes += c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 2 : 3;
  }
  return bytes > max;
}
