// A trie over tokens' bytes stored as flat arrays in depth-first order: each node knows the byte
// that leads to it, its depth, the index after its subtree and the tokens that end there, so a
// mask is one linear walk that skips a whole subtree as soon as the grammar refuses its prefix.

export class TokenTrie {
  /** Node i (0 is the root): the byte that leads to it, its depth, and the index after its subtree. */
  readonly nodeByte: Uint8Array;
  readonly nodeDepth: Uint16Array;
  readonly nodeEnd: Int32Array;
  /** The first token whose bytes end at node i, or -1; more in sameBytes. */
  readonly nodeToken: Int32Array;
  /** Per token: the next token with the same bytes, or -1. */
  readonly sameBytes: Int32Array;
  readonly maxDepth: number;

  /** Over the tokens `ids` (each with bytes), for a vocabulary of `vocabSize`. */
  constructor(ids: number[], bytes: ReadonlyArray<Uint8Array | null>, vocabSize: number) {
    ids = ids.slice().sort((a, b) => compareBytes(bytes[a]!, bytes[b]!) || a - b);
    // Each token adds the nodes past its common prefix with the previous one.
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
    this.sameBytes = new Int32Array(vocabSize).fill(-1);
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
