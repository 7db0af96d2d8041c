// The per-token type stored in `tokenizer.ggml.token_type` (llama.cpp's llama_token_type).
export enum TokenType {
  UNDEFINED = 0,
  NORMAL = 1,
  UNKNOWN = 2,
  /** BOS, EOS, chat markers: recognised in text only when special-token parsing is on. */
  CONTROL = 3,
  /** Added tokens (Qwen's `<tool_call>`): always recognised in text, decoded verbatim. */
  USER_DEFINED = 4,
  UNUSED = 5,
  /** SentencePiece byte fallback `<0xNN>`. */
  BYTE = 6,
}
