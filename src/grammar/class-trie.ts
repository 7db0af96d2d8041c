// The vocabulary's token trie as a regular rule sees it: bytes that every edge of the rule treats
// alike are one class, and tokens that spell the same classes share a path. A format or pattern
// has a few dozen classes where the byte trie has 256 branches per node, so its trie is 10-250
// times smaller (the Llama 3 trie has 275k nodes; a length-bounded package-name pattern sees 1k),
// and a state's walk visits only the class paths alive from it. Bytes no edge of the rule takes
// end every path, so tokens holding one are left out past it.
import type { Grammar } from './grammar.js';
import type { TokenTrie } from './token-trie.js';

export class ClassTrie {
  /** Node i (0 is the root): the class of the byte that leads to it, its depth, the index after its subtree. */
  readonly nodeClass: Uint16Array;
  readonly nodeDepth: Uint16Array;
  readonly nodeEnd: Int32Array;
  /** Tokens whose bytes spell node i's path: tokens[tokenStart[i] .. tokenStart[i + 1]]. */
  readonly tokenStart: Int32Array;
  readonly tokens: Int32Array;
  /**
   * Nodes of the byte trie that spell node i's path and have longer tokens below them:
   * branches[branchStart[i] .. branchStart[i + 1]]. Where the rule may end at node i, the rest of
   * those tokens goes on in the caller, from these nodes.
   */
  readonly branchStart: Int32Array;
  readonly branches: Int32Array;
  readonly maxDepth: number;

  /**
   * Over the byte trie `trie`, with `classOf[b]` the class of byte b (0 .. classes - 1), or -1
   * for a byte the rule never takes.
   */
  constructor(trie: TokenTrie, classOf: Int16Array, classes: number) {
    const { nodeByte, nodeDepth, nodeEnd, nodeToken, sameBytes } = trie;
    const n = trie.nodeCount;
    // Pass 1, over the byte trie in its order: each byte node's class node, numbered as first met;
    // child[x * classes + c] is class node x's child by class c (0 for none: the root is no child).
    let child = new Int32Array(1024 * classes);
    let parent = new Int32Array(1024).fill(-1);
    let classOfNode = new Uint16Array(1024);
    /** Byte nodes on some class path (byteNodes[0 .. visited]), and their class nodes. */
    const byteNodes = new Int32Array(n);
    const classNodes = new Int32Array(n);
    let visited = 0;
    const at = new Int32Array(trie.maxDepth + 1);
    let count = 1;
    let maxDepth = 0;
    let i = 1;
    while (i < n) {
      const c = classOf[nodeByte[i]!]!;
      if (c < 0) {
        i = nodeEnd[i]!;
        continue;
      }
      const d = nodeDepth[i]!;
      const p = at[d - 1]!;
      let x = child[p * classes + c]!;
      if (x === 0) {
        x = count++;
        if (count > parent.length) {
          child = grow(child, child.length * 2);
          parent = grow(parent, parent.length * 2);
          classOfNode = grow(classOfNode, classOfNode.length * 2);
        }
        child[p * classes + c] = x;
        parent[x] = p;
        classOfNode[x] = c;
        if (d > maxDepth) maxDepth = d;
      }
      at[d] = x;
      byteNodes[visited] = i;
      classNodes[visited++] = x;
      i++;
    }
    // Pass 2: the class nodes laid out depth first, so a walk skips a dead subtree in one step.
    const childStart = new Int32Array(count + 1);
    for (let x = 1; x < count; x++) childStart[parent[x]! + 1]!++;
    for (let x = 0; x < count; x++) childStart[x + 1]! += childStart[x]!;
    const children = new Int32Array(Math.max(0, count - 1));
    const fill = childStart.slice(0, count);
    for (let x = 1; x < count; x++) children[fill[parent[x]!]!++] = x;
    const order = new Int32Array(count);
    this.nodeClass = new Uint16Array(count);
    this.nodeDepth = new Uint16Array(count);
    this.nodeEnd = new Int32Array(count);
    const stack: number[] = [0];
    const depthOf = new Uint16Array(count);
    let next = 0;
    while (stack.length > 0) {
      const x = stack.pop()!;
      if (x < 0) {
        this.nodeEnd[order[~x]!] = next;
        continue;
      }
      order[x] = next;
      this.nodeClass[next] = classOfNode[x]!;
      this.nodeDepth[next] = depthOf[x]!;
      next++;
      stack.push(~x);
      for (let k = childStart[x + 1]! - 1; k >= childStart[x]!; k--) {
        const child = children[k]!;
        depthOf[child] = depthOf[x]! + 1;
        stack.push(child);
      }
    }
    this.maxDepth = maxDepth;
    // Tokens and branching byte nodes, grouped by class node (a counting sort).
    const tokenStart = new Int32Array(count + 1);
    const branchStart = new Int32Array(count + 1);
    for (let k = 0; k < visited; k++) {
      const b = byteNodes[k]!;
      const o = order[classNodes[k]!]!;
      for (let tok = nodeToken[b]!; tok >= 0; tok = sameBytes[tok]!) tokenStart[o + 1]!++;
      if (nodeEnd[b]! > b + 1) branchStart[o + 1]!++;
    }
    for (let o = 0; o < count; o++) {
      tokenStart[o + 1]! += tokenStart[o]!;
      branchStart[o + 1]! += branchStart[o]!;
    }
    this.tokens = new Int32Array(tokenStart[count]!);
    this.branches = new Int32Array(branchStart[count]!);
    const tokenFill = tokenStart.slice(0, count);
    const branchFill = branchStart.slice(0, count);
    for (let k = 0; k < visited; k++) {
      const b = byteNodes[k]!;
      const o = order[classNodes[k]!]!;
      for (let tok = nodeToken[b]!; tok >= 0; tok = sameBytes[tok]!) this.tokens[tokenFill[o]!++] = tok;
      if (nodeEnd[b]! > b + 1) this.branches[branchFill[o]!++] = b;
    }
    this.tokenStart = tokenStart;
    this.branchStart = branchStart;
  }

  get nodeCount(): number {
    return this.nodeClass.length;
  }
}

function grow<T extends Int32Array | Uint16Array>(a: T, length: number): T {
  const b = new (a.constructor as new (length: number) => T)(length);
  b.set(a);
  return b;
}

/** A rule without calls over byte classes: how it splits the bytes, and its steps per class. */
export interface ClassRule {
  /** classOf[b] is the class of byte b, or -1 where no state takes b. */
  readonly classOf: Int16Array;
  readonly classes: number;
  /** Equal for two rules exactly when they split the bytes alike (so they can share a ClassTrie). */
  readonly key: string;
  /** The rule's first state; its states are numbered from it. */
  readonly first: number;
  /** next[(s - first) * classes + c]: the state after a byte of class c from s (from first), or -1. */
  readonly next: Int32Array;
  /** Per state (from first): 1 where the rule may end, 2 where nothing but the end can follow. */
  readonly ends: Uint8Array;
}

/**
 * States `first .. end - 1` of `g` (one rule without calls) over byte classes: two bytes are one
 * class when every state steps to the same state on both.
 */
export function classRule(g: Grammar, first: number, end: number): ClassRule {
  const cuts = new Set<number>([0]);
  for (let i = g.byteStart[first]!; i < g.byteStart[end]!; i++) {
    cuts.add(g.byteLo[i]!);
    if (g.byteHi[i]! < 255) cuts.add(g.byteHi[i]! + 1);
  }
  const points = [...cuts].sort((a, b) => a - b);
  const classOf = new Int16Array(256).fill(-1);
  const ids = new Map<string, number>();
  const columns: Int32Array[] = [];
  const n = end - first;
  for (let p = 0; p < points.length; p++) {
    const lo = points[p]!;
    const hi = p + 1 < points.length ? points[p + 1]! - 1 : 255;
    const column = new Int32Array(n);
    let alive = false;
    for (let s = 0; s < n; s++) {
      const t = g.byteTarget(first + s, lo);
      column[s] = t < 0 ? -1 : t - first;
      if (t >= 0) alive = true;
    }
    if (!alive) continue;
    const sig = column.join(',');
    let c = ids.get(sig);
    if (c === undefined) {
      ids.set(sig, (c = ids.size));
      columns.push(column);
    }
    classOf.fill(c, lo, hi + 1);
  }
  const classes = ids.size;
  const next = new Int32Array(n * classes);
  for (let c = 0; c < classes; c++) for (let s = 0; s < n; s++) next[s * classes + c] = columns[c]![s]!;
  const ends = new Uint8Array(n);
  for (let s = 0; s < n; s++) if (g.accepting[first + s]) ends[s] = g.hasBytes(first + s) ? 1 : 2;
  return { classOf, classes, key: classOf.join(','), first, next, ends };
}
