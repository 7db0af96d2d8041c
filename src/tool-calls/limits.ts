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
