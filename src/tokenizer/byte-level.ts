// GPT-2's byte-level alphabet: each byte is written as one printable code point, so byte-level
// BPE vocabularies are strings. Printable Latin-1 bytes stand for themselves; the rest map to
// U+0100 upwards in byte order.
const byteToChar: string[] = new Array<string>(256);
const charToByte = new Map<number, number>();
const utf8 = new TextEncoder();

{
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    const cp = printable ? b : 256 + extra++;
    byteToChar[b] = String.fromCodePoint(cp);
    charToByte.set(cp, b);
  }
}

/** The byte-level spelling of a string's UTF-8 bytes. */
export function toByteLevel(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      out += byteToChar[c];
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if ((d & 0xfc00) === 0xdc00) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if ((c & 0xf800) === 0xd800) c = 0xfffd; // a lone surrogate is written as U+FFFD, as TextEncoder does
    if (c < 0x800) {
      out += byteToChar[0xc0 | (c >> 6)]! + byteToChar[0x80 | (c & 63)]!;
    } else if (c < 0x10000) {
      out += byteToChar[0xe0 | (c >> 12)]! + byteToChar[0x80 | ((c >> 6) & 63)]! + byteToChar[0x80 | (c & 63)]!;
    } else {
      out += byteToChar[0xf0 | (c >> 18)]! + byteToChar[0x80 | ((c >> 12) & 63)]!
        + byteToChar[0x80 | ((c >> 6) & 63)]! + byteToChar[0x80 | (c & 63)]!;
    }
  }
  return out;
}

/** The bytes a byte-level string stands for; a code point outside the alphabet keeps its UTF-8. */
export function fromByteLevel(text: string): Uint8Array {
  const out: number[] = [];
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const b = charToByte.get(cp);
    if (b !== undefined) out.push(b);
    else for (const x of utf8.encode(ch)) out.push(x);
  }
  return Uint8Array.from(out);
}
