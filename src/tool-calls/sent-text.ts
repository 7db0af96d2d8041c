// Text already sent to a client, remembered as its length and a 32-bit FNV-1a hash: enough to
// tell at the end whether the final parse starts with it, without keeping (and joining) a copy of
// every piece, which costs more than the whole scan for a reply of a quarter-million tokens.

const OFFSET = 0x811c9dc5;
const PRIME = 0x01000193;

function hash(h: number, s: string, from: number, to: number): number {
  for (let i = from; i < to; i++) h = Math.imul(h ^ s.charCodeAt(i), PRIME);
  return h;
}

export class SentText {
  length = 0;
  private h = OFFSET;

  push(s: string): void {
    this.h = hash(this.h, s, 0, s.length);
    this.length += s.length;
  }

  /** True when `text` begins with everything sent (up to a 2^-32 chance of a false yes). */
  isPrefixOf(text: string): boolean {
    return text.length >= this.length && hash(OFFSET, text, 0, this.length) === this.h;
  }

  /** True when `text` is exactly what was sent. */
  equals(text: string): boolean {
    return text.length === this.length && this.isPrefixOf(text);
  }
}
