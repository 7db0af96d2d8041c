// The streaming detokenizer holds back bytes of an unfinished UTF-8 character.
import { describe, expect, it } from 'vitest';
import { Utf8StreamingDetokenizer } from '../../../src/tokenizer/streaming-detokenizer.js';

// Token i stands for the i-th byte array.
const streamOf = (pieces: number[][]) => new Utf8StreamingDetokenizer((id) => Uint8Array.from(pieces[id]!));

describe('Utf8StreamingDetokenizer', () => {
  it('never emits half a character', () => {
    const euro = [...new TextEncoder().encode('€')]; // 3 bytes
    const d = streamOf([[0x61], [euro[0]!], [euro[1]!], [euro[2]!, 0x62]]);
    expect(d.push(0)).toBe('a');
    expect(d.push(1)).toBe('');
    expect(d.push(2)).toBe('');
    expect(d.push(3)).toBe('€b');
    expect(d.flush()).toBe('');
  });

  it('holds a 4-byte emoji split across tokens', () => {
    const bytes = [...new TextEncoder().encode('😀')];
    const d = streamOf(bytes.map((b) => [b]));
    const out = bytes.map((_, i) => d.push(i));
    expect(out).toEqual(['', '', '', '😀']);
  });

  it('flushes an unfinished character as U+FFFD', () => {
    const d = streamOf([[0xe2, 0x82]]);
    expect(d.push(0)).toBe('');
    expect(d.flush()).toBe('\uFFFD');
  });

  it('keeps a leading U+FEFF', () => {
    const d = streamOf([[0xef, 0xbb, 0xbf, 0x61]]);
    expect(d.push(0)).toBe('\uFEFFa');
  });
});
