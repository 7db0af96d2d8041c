// Code point ranges as sequences of UTF-8 byte ranges (the construction RE2 and Rust's
// regex-syntax use): a character class becomes a small byte automaton, so a token that ends in
// the middle of a character is matched up to where it ends. Surrogates are never produced.

/** One way to spell part of a range: byte ranges, one per byte position, pairs lo, hi. */
export type ByteSequence = number[];

const MAX_BY_LENGTH = [0x7f, 0x7ff, 0xffff, 0x10ffff];

export function utf8Sequences(lo: number, hi: number, out: ByteSequence[] = []): ByteSequence[] {
  // Surrogates cannot be encoded in UTF-8.
  if (lo <= 0xdfff && hi >= 0xd800) {
    if (lo < 0xd800) utf8Sequences(lo, 0xd7ff, out);
    if (hi > 0xdfff) utf8Sequences(0xe000, hi, out);
    return out;
  }
  split(lo, hi, out);
  return out;
}

function split(lo: number, hi: number, out: ByteSequence[]): void {
  if (lo > hi) return;
  // Split where the encoded length changes.
  for (let i = 0; i < MAX_BY_LENGTH.length - 1; i++) {
    const max = MAX_BY_LENGTH[i]!;
    if (lo <= max && hi > max) {
      split(lo, max, out);
      split(max + 1, hi, out);
      return;
    }
  }
  if (hi <= 0x7f) {
    out.push([lo, hi]);
    return;
  }
  // Split until every continuation byte position spans a full 6-bit range or a single value.
  for (let i = 1; i < 4; i++) {
    const m = (1 << (6 * i)) - 1;
    if ((lo & ~m) !== (hi & ~m)) {
      if ((lo & m) !== 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) !== m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  const a = encode(lo);
  const b = encode(hi);
  const seq: number[] = [];
  for (let i = 0; i < a.length; i++) seq.push(a[i]!, b[i]!);
  out.push(seq);
}

function encode(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
}
