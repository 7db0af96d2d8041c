// Tokens in, text out, one token at a time. A token may end in the middle of a UTF-8 character
// (byte-fallback and byte-level tokens do); those bytes are held back until the character is whole.
export interface StreamingDetokenizer {
  /** Adds one token; returns the text that is now complete (maybe ""). */
  push(id: number): string;
  /** Ends the stream; bytes of an unfinished character come out as U+FFFD. */
  flush(): string;
}

/** A streaming detokenizer over a function giving each token's bytes. */
export class Utf8StreamingDetokenizer implements StreamingDetokenizer {
  // TextDecoder in stream mode keeps an incomplete trailing sequence for the next call;
  // ignoreBOM keeps a U+FEFF that a token really contains.
  private readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true });

  constructor(private readonly pieceBytes: (id: number) => Uint8Array) {}

  push(id: number): string {
    return this.decoder.decode(this.pieceBytes(id), { stream: true });
  }

  flush(): string {
    return this.decoder.decode();
  }
}
