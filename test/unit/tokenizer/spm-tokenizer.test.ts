// SentencePiece mechanics on a small hand-made vocabulary: score-ordered merges, dummy prefix,
// byte fallback, special tokens only with parseSpecial. (Whole-vocabulary agreement with the
// reference tokenizers is in tokenizer-oracle tests.)
import { describe, expect, it } from 'vitest';
import { SpmTokenizer } from '../../../src/tokenizer/spm-tokenizer.js';
import { TokenType } from '../../../src/tokenizer/token-type.js';
import type { Vocabulary } from '../../../src/tokenizer/vocabulary.js';

function vocab(): Vocabulary {
  const pieces: [string, number, TokenType][] = [
    ['<unk>', 0, TokenType.UNKNOWN], ['<s>', 0, TokenType.CONTROL], ['</s>', 0, TokenType.CONTROL],
  ];
  for (let b = 0; b < 256; b++) pieces.push([`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0, TokenType.BYTE]);
  const normal: [string, number][] = [
    ['▁', -1], ['a', -2], ['b', -3], ['c', -4], ['▁a', -5], ['ab', -6], ['bc', -7], ['▁ab', -8], ['abc', -9],
    ['<', -10], ['s', -11], ['>', -12], ['<s', -13],
  ];
  for (const [p, s] of normal) pieces.push([p, s, TokenType.NORMAL]);
  pieces.push(['<tool>', 0, TokenType.USER_DEFINED]);
  return {
    model: 'llama', pre: null,
    tokens: pieces.map((p) => p[0]), scores: pieces.map((p) => p[1]), tokenTypes: pieces.map((p) => p[2]),
    merges: null, bosId: 1, eosId: 2, unkId: 0, padId: null, extraEogIds: [],
    addBos: true, addEos: false, addSpacePrefix: true,
  };
}

describe('SpmTokenizer', () => {
  const tok = new SpmTokenizer(vocab());
  const id = (p: string) => vocab().tokens.indexOf(p);

  it('merges the best-scoring pair first', () => {
    // "▁abc": ▁a(-5) beats ab(-6) and bc(-7); then bc(-7) beats the new ▁ab(-8).
    expect(tok.encode('abc', { addSpecial: false })).toEqual([id('▁a'), id('bc')]);
  });

  it('adds BOS and the dummy prefix, and spaces become ▁', () => {
    expect(tok.encode('a b')).toEqual([1, id('▁a'), id('▁'), id('b')]);
  });

  it('falls back to bytes for unknown characters', () => {
    const ids = tok.encode('é', { addSpecial: false });
    expect(ids).toEqual([id('▁'), id('<0xC3>'), id('<0xA9>')]);
    expect(tok.decode(ids)).toBe('é');
  });

  it('recognises control tokens only with parseSpecial, user-defined always', () => {
    const plain = tok.encode('a</s>', { addSpecial: false });
    expect(plain).not.toContain(2);
    expect(tok.encode('a</s>', { addSpecial: false, parseSpecial: true })).toEqual([id('▁a'), 2]);
    expect(tok.encode('a<tool>b', { addSpecial: false })).toEqual([id('▁a'), id('<tool>'), id('▁'), id('b')]);
  });

  it('never merges user text into a control token', () => {
    // "<s" + ">" spells the BOS piece, which SentencePiece only emits as a special token.
    expect(tok.encode('<s>', { addSpecial: false })).toEqual([id('▁'), id('<s'), id('>')]);
  });

  it('decodes dropping the dummy-prefix space, control tokens by text unless skipped', () => {
    const ids = tok.encode('a b');
    expect(tok.decode(ids, { skipSpecial: true })).toBe('a b');
    expect(tok.decode(ids)).toBe('<s> a b');
  });

  it('rejects ids outside the vocabulary with a typed error', () => {
    expect(() => tok.decode([100000])).toThrow(/outside the vocabulary/);
  });
});
