// What the matcher needs to know about a vocabulary, built once per tokenizer: every token's
// bytes, the end-of-generation ids, the token trie, and the string-character slice: the tokens
// made only of characters a JSON string takes as they are (UTF-8, possibly ending inside a
// character), with a second trie of all other tokens. From a grammar state where every such
// token is allowed, a mask is that slice's bitset plus a walk of the (much smaller) second trie;
// under a length bound, the bitset of the slice tokens that start at most the characters left.
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { type ClassRule, ClassTrie } from './class-trie.js';
import { TokenTrie } from './token-trie.js';

export interface TokenSlice {
  /** Tokens made only of string characters, as a mask. */
  readonly bits: Uint32Array;
  /** The other tokens. */
  readonly rest: TokenTrie;
  /** Most characters a slice token starts (a character it ends inside counts). */
  readonly maxChars: number;
  /** The slice tokens that start at most `chars` characters, as a mask (possibly kept: do not change it). */
  upTo(chars: number): Uint32Array;
}

/**
 * The string-character automaton over bytes, as triples (state, lo, hi, next) flattened: state 0
 * is between characters; the others are inside a UTF-8 character (well-formed sequences only).
 */
export const SLICE_EDGES: readonly number[] = [
  0, 0x20, 0x21, 0, 0, 0x23, 0x5b, 0, 0, 0x5d, 0x7f, 0,
  0, 0xc2, 0xdf, 1, 0, 0xe0, 0xe0, 4, 0, 0xe1, 0xec, 2, 0, 0xed, 0xed, 5, 0, 0xee, 0xef, 2,
  0, 0xf0, 0xf0, 6, 0, 0xf1, 0xf3, 3, 0, 0xf4, 0xf4, 7,
  1, 0x80, 0xbf, 0, 2, 0x80, 0xbf, 1, 3, 0x80, 0xbf, 2,
  4, 0xa0, 0xbf, 1, 5, 0x80, 0x9f, 1, 6, 0x90, 0xbf, 2, 7, 0x80, 0x8f, 2,
];
const SLICE_STATES = 8;

/** Class tries kept per vocabulary, the least recently used dropped first (each is at most a few MB). */
const MAX_CLASS_TRIES = 16;
/** Largest length bound whose slice mask is kept (each is vocabSize / 8 bytes). */
const MAX_KEPT_BOUND = 256;

export class TokenIndex {
  readonly vocabSize: number;
  /** Words of a mask: ceil(vocabSize / 32). */
  readonly words: number;
  /** Tokens that end generation; allowed exactly when the grammar can end. */
  readonly eog: readonly number[];
  /** Per token: its bytes, or null for tokens a grammar never allows (control, end of generation, empty). */
  readonly bytes: ReadonlyArray<Uint8Array | null>;
  readonly trie: TokenTrie;
  readonly slice: TokenSlice;
  /** Masks of grammar states, shared by every grammar compiled for this vocabulary (see NodeMasks). */
  readonly sharedMasks = new Map<string, unknown>();

  constructor(tokenizer: Tokenizer) {
    const n = tokenizer.vocabSize;
    this.vocabSize = n;
    this.words = (n + 31) >>> 5;
    const eog: number[] = [];
    const bytes: Array<Uint8Array | null> = new Array(n);
    const ids: number[] = [];
    for (let id = 0; id < n; id++) {
      if (tokenizer.isEog(id)) {
        eog.push(id);
        bytes[id] = null;
        continue;
      }
      const b = tokenizer.isControl(id) ? null : tokenizer.pieceBytes(id);
      bytes[id] = b !== null && b.length > 0 && b.length < 0xffff ? b : null;
      if (bytes[id] !== null) ids.push(id);
    }
    this.eog = eog;
    this.bytes = bytes;
    this.trie = new TokenTrie(ids, bytes, n);
    const step = new Int8Array(SLICE_STATES * 256).fill(-1);
    for (let i = 0; i < SLICE_EDGES.length; i += 4) {
      for (let b = SLICE_EDGES[i + 1]!; b <= SLICE_EDGES[i + 2]!; b++) step[SLICE_EDGES[i]! * 256 + b] = SLICE_EDGES[i + 3]!;
    }
    const sliceBits = new Uint32Array(this.words);
    const rest: number[] = [];
    /** Per slice token: the characters it starts; every other token: 0. */
    const chars = new Uint16Array(n);
    let maxChars = 0;
    for (const id of ids) {
      let s = 0;
      let started = 0;
      for (const b of bytes[id]!) {
        if (s < 0) break;
        if (s === 0) started++;
        s = step[s * 256 + b]!;
      }
      if (s >= 0) {
        sliceBits[id >>> 5]! |= 1 << (id & 31);
        chars[id] = started;
        if (started > maxChars) maxChars = started;
      } else {
        rest.push(id);
      }
    }
    // The masks per bound up to MAX_KEPT_BOUND, all built on first use (one pass; a string's bound
    // moves a character at a time); a vocabulary with longer tokens gets larger bounds' masks afresh.
    let upTo: Uint32Array[] | null = null;
    const words = this.words;
    this.slice = {
      bits: sliceBits,
      rest: new TokenTrie(rest, bytes, n),
      maxChars,
      upTo: (limit) => {
        if (limit >= maxChars) return sliceBits;
        if (limit > MAX_KEPT_BOUND) {
          const m = new Uint32Array(words);
          for (let id = 0; id < n; id++) if (chars[id]! > 0 && chars[id]! <= limit) m[id >>> 5]! |= 1 << (id & 31);
          return m;
        }
        if (upTo === null) {
          const kept = Math.min(maxChars - 1, MAX_KEPT_BOUND);
          const levels: Uint32Array[] = [new Uint32Array(words)];
          const byChars: number[][] = Array.from({ length: kept + 1 }, () => []);
          for (let id = 0; id < n; id++) if (chars[id]! > 0 && chars[id]! <= kept) byChars[chars[id]!]!.push(id);
          for (let c = 1; c <= kept; c++) {
            const m = levels[c - 1]!.slice();
            for (const id of byChars[c]!) m[id >>> 5]! |= 1 << (id & 31);
            levels.push(m);
          }
          upTo = levels;
        }
        return upTo[limit]!;
      },
    };
  }

  private readonly classTries = new Map<string, ClassTrie>();

  /** The token trie as rules that split the bytes into `classes` see it, built on first use. */
  classTrie(classes: ClassRule): ClassTrie {
    let t = this.classTries.get(classes.key);
    if (t === undefined) {
      t = new ClassTrie(this.trie, classes.classOf, classes.classes);
      if (this.classTries.size >= MAX_CLASS_TRIES) this.classTries.delete(this.classTries.keys().next().value!);
    } else {
      this.classTries.delete(classes.key);
    }
    this.classTries.set(classes.key, t);
    return t;
  }

  get maxDepth(): number {
    return this.trie.maxDepth;
  }
}

const indexes = new WeakMap<Tokenizer, TokenIndex>();

/** The index of a tokenizer's vocabulary, built on first use. */
export function tokenIndexOf(tokenizer: Tokenizer): TokenIndex {
  let index = indexes.get(tokenizer);
  if (index === undefined) {
    index = new TokenIndex(tokenizer);
    indexes.set(tokenizer, index);
  }
  return index;
}
