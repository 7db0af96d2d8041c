// What the matcher needs to know about a vocabulary, built once per tokenizer: every token's
// bytes, the end-of-generation ids, and a trie over the tokens' bytes stored as flat arrays in
// depth-first order (each node knows where its subtree ends), so a mask is one linear walk that
// skips a whole subtree as soon as the grammar refuses its prefix.
import type { Tokenizer } from '../tokenizer/tokenizer.js';

export class TokenIndex {
  readonly vocabSize: number;
  /** Words of a mask: ceil(vocabSize / 32). */
  readonly words: number;
  /** Tokens that end generation; allowed exactly when the grammar can end. */
  readonly eog: readonly number[];
  /** Per token: its bytes, or null for tokens a grammar never allows (control, end of generation, empty). */
  readonly bytes: ReadonlyArray<Uint8Array | null>;
  /** Trie node i (0 is the root): the byte that leads to it, its depth, and the index after its subtree. */
  readonly nodeByte: Uint8Array;
  readonly nodeDepth: Uint16Array;
  readonly nodeEnd: Int32Array;
  /** The first token whose bytes end at node i, or -1; more in sameBytes. */
  readonly nodeToken: Int32Array;
  /** Per token: the next token with the same bytes, or -1. */
  readonly sameBytes: Int32Array;
  readonly maxDepth: number;
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
    ids.sort((a, b) => compareBytes(bytes[a]!, bytes[b]!) || a - b);

    // Nodes in depth-first order: each token adds the nodes past its common prefix with the previous.
    const lcp = new Int32Array(ids.length);
    let total = 1;
    let maxDepth = 0;
    for (let k = 0; k < ids.length; k++) {
      const cur = bytes[ids[k]!]!;
      lcp[k] = k === 0 ? 0 : commonPrefix(bytes[ids[k - 1]!]!, cur);
      total += cur.length - lcp[k]!;
      if (cur.length > maxDepth) maxDepth = cur.length;
    }
    this.maxDepth = maxDepth;
    this.nodeByte = new Uint8Array(total);
    this.nodeDepth = new Uint16Array(total);
    this.nodeEnd = new Int32Array(total);
    this.nodeToken = new Int32Array(total).fill(-1);
    this.sameBytes = new Int32Array(n).fill(-1);
    const open = new Int32Array(maxDepth + 1);
    let openDepth = 0; // open[0..openDepth] is the path to the last node
    let next = 1;
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k]!;
      const cur = bytes[id]!;
      const keep = lcp[k]!;
      if (keep === cur.length) {
        // Same bytes as the previous token: chain it on the existing node.
        let t = this.nodeToken[open[keep]!]!;
        while (this.sameBytes[t] !== -1) t = this.sameBytes[t]!;
        this.sameBytes[t] = id;
        continue;
      }
      for (; openDepth > keep; openDepth--) this.nodeEnd[open[openDepth]!] = next;
      for (let d = keep + 1; d <= cur.length; d++) {
        this.nodeByte[next] = cur[d - 1]!;
        this.nodeDepth[next] = d;
        open[d] = next;
        openDepth = d;
        next++;
      }
      this.nodeToken[open[cur.length]!] = id;
    }
    for (; openDepth > 0; openDepth--) this.nodeEnd[open[openDepth]!] = next;
    this.nodeEnd[0] = next;
  }

  get nodeCount(): number {
    return this.nodeByte.length;
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

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

function commonPrefix(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
