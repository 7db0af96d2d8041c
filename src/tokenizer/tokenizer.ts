// The tokenizer contract every model family implements: text <-> token ids, exactly as the model's
// own tokenizer does it.
import type { StreamingDetokenizer } from './streaming-detokenizer.js';

export interface EncodeOptions {
  /** Add BOS/EOS as the model's `add_bos_token`/`add_eos_token` say. Default true. */
  addSpecial?: boolean;
  /**
   * Recognise control tokens (`<|im_end|>`, `<s>`) written as text. Default false: user content
   * never produces a control token. User-defined added tokens are recognised either way.
   */
  parseSpecial?: boolean;
}

export interface AsyncEncodeOptions extends EncodeOptions {
  /**
   * Stop once more ids than this are produced: the result is then a prefix of the encoding, longer
   * than maxTokens (a prompt that cannot fit the context needs no more work).
   */
  maxTokens?: number;
  /** How long to work before letting the event loop run; default ENCODE_SLICE_MS (2 ms). */
  sliceMs?: number;
}

export interface DecodeOptions {
  /** Drop control and unknown tokens instead of writing their text. Default false. */
  skipSpecial?: boolean;
}

export interface DecoderOptions {
  /** Drop control and unknown tokens instead of writing their text. Default false. */
  skipSpecial?: boolean;
}

export interface Tokenizer {
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  readonly addBos: boolean;
  encode(text: string, opts?: EncodeOptions): number[];
  /**
   * encode() without holding the event loop: the work is cut into slices of a few milliseconds
   * with a turn of the event loop between them (same ids as encode()).
   */
  encodeAsync(text: string, opts?: AsyncEncodeOptions): Promise<number[]>;
  /** The longest text, in UTF-16 code units, that one token produced by encoding stands for. */
  readonly maxTokenChars: number;
  decode(ids: ArrayLike<number>, opts?: DecodeOptions): string;
  /**
   * The text of one token as it appears in generated output (control tokens by their text). A
   * token holding part of a UTF-8 character reads as U+FFFD; stream with createDecoder instead.
   */
  tokenToPiece(id: number): string;
  /** The bytes one token stands for in generated output (control tokens by their text). */
  pieceBytes(id: number): Uint8Array;
  /** Whether the token ends generation (EOS, EOT, `<|im_end|>`, ...). */
  isEog(id: number): boolean;
  isControl(id: number): boolean;
  /** A decoder for generated tokens; it keeps every leading space (nothing precedes it here). */
  createDecoder(opts?: DecoderOptions): StreamingDetokenizer;
}
