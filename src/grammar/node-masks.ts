// The part of a mask that depends only on the innermost rule's state, computed once per state and
// kept: walking the whole token trie from that state alone (the stack below it unknown), a token
// whose bytes all fit without the rule ending is allowed whatever surrounds it ("inside"); where
// the rule can end partway through a token, the rest of the token depends on the caller, so the
// trie node is kept ("dependents") and its subtree is walked again, from the real caller's state,
// when a mask is asked for. Grammars share these through the vocabulary's index, keyed by the
// rule's canonical signature, so a JSON string body is walked once per vocabulary, not per schema.
// Three shortcuts keep a state's first walk small: a rule without calls walks on its own automaton
// (no matcher sets to intern); a format's or pattern's state walks the vocabulary's class trie for
// the rule's byte classes (see ClassTrie); and where the rule takes any string character up to a
// bound (a string body, a maxLength), the string-character tokens up to the bound are one kept
// bitset and only the other tokens are walked (see sliceReach).
import { type ClassRule, classRule, type ClassTrie } from './class-trie.js';
import type { Grammar } from './grammar.js';
import type { CompiledGrammar } from './matcher.js';
import { DEAD, EMPTY_STACK, Pda } from './pda.js';
import { SLICE_EDGES, type TokenIndex } from './token-index.js';
import type { TokenTrie } from './token-trie.js';

export interface NodeMask {
  /** Allowed whatever the caller: a bitset of `words` words, or (when few) the token ids. */
  readonly inside: Uint32Array | Int32Array;
  readonly sparse: boolean;
  /** Nodes of `trie` after which the rule may have ended and the token goes on in the caller. */
  readonly dependents: Int32Array;
  readonly trie: TokenTrie;
}

/** Most (string-automaton state, matcher set) pairs the slice check follows (a level holds a few dozen). */
const MAX_SLICE_PAIRS = 8192;

/** Shared masks kept per vocabulary before the oldest are dropped (each is at most vocab/8 bytes). */
const MAX_SHARED_MASKS = 4096;
/** Longest signature worth sharing; longer ones belong to big one-off rules. */
const MAX_SHARED_SIGNATURE = 16_384;

/** Interned sets one grammar's walks may share before they start afresh. */
const MAX_WALK_SETS = 20_000;

export class NodeMasks {
  private readonly local = new Map<number, NodeMask>();
  /** Per eager rule: its steps over byte classes and the class trie its states walk, or null (see classWalkOf). */
  private readonly classWalks = new Map<number, ClassWalk | null>();
  private readonly eager: ReadonlySet<number>;
  /** The walks' own matcher tables (stacks rooted at the walked state), shared by all walks of this grammar. */
  private walkPda: Pda;

  constructor(private readonly grammar: Grammar, private readonly index: TokenIndex) {
    this.walkPda = new Pda(grammar);
    this.eager = new Set(grammar.eagerRules);
  }

  /**
   * How the states of an eager rule (a format, pattern or length: many states) walk a class trie,
   * when the rule calls no other rule and takes ASCII only (so most of the vocabulary's tokens
   * leave its class trie early); null for other rules, whose states walk the byte trie.
   */
  classWalkOf(rule: number): ClassWalk | null {
    if (!this.eager.has(rule)) return null;
    let w = this.classWalks.get(rule);
    if (w === undefined) {
      const g = this.grammar;
      const [first, end] = g.statesOf(rule);
      const r = g.callStart[first] === g.callStart[end] ? classRule(g, first, end) : null;
      w = r === null || r.classOf.subarray(0x80).some((c) => c >= 0) ? null : { rule: r, trie: this.index.classTrie(r) };
      this.classWalks.set(rule, w);
    }
    return w;
  }

  get(state: number): NodeMask {
    let m = this.local.get(state);
    if (m !== undefined) return m;
    const g = this.grammar;
    const rule = g.ruleOf[state]!;
    const sig = g.ruleSignature(rule, MAX_SHARED_SIGNATURE);
    const shared = this.index.sharedMasks as Map<string, NodeMask>;
    const key = sig !== null && sig.length <= MAX_SHARED_SIGNATURE ? `${state - g.ruleStart[rule]!}#${sig}` : null;
    m = key === null ? undefined : shared.get(key);
    if (m === undefined) {
      if (this.walkPda.setCount > MAX_WALK_SETS) this.walkPda = new Pda(g);
      const classWalk = this.classWalkOf(rule);
      m = classWalk === null ? computeNodeMask(this.walkPda, this.index, state) : classMask(this.index, classWalk, state);
      if (key !== null) {
        if (shared.size >= MAX_SHARED_MASKS) shared.delete(shared.keys().next().value!);
        shared.set(key, m);
      }
    }
    this.local.set(state, m);
    return m;
  }
}

export function computeNodeMask(pda: Pda, index: TokenIndex, state: number): NodeMask {
  const g = pda.grammar;
  const [first, end] = g.statesOf(g.ruleOf[state]!);
  // A rule without calls steps on its own automaton: no matcher sets to intern (a length-bounded
  // string meets a new set at every character).
  const leaf = g.callStart[first] === g.callStart[end];
  const root = leaf ? state : pda.closure([pda.push(state, EMPTY_STACK)]);
  const reach = root === DEAD ? -1 : sliceReach(pda, leaf, root, index.slice.maxChars);
  const useSlice = reach >= 0;
  const trie = useSlice ? index.slice.rest : index.trie;
  const bits = useSlice ? index.slice.upTo(reach).slice() : new Uint32Array(index.words);
  const dependents: number[] = [];
  if (leaf) ruleWalk(g, trie, root, bits, dependents);
  else if (root !== DEAD) pdaWalk(pda, trie, root, bits, dependents);
  return nodeMask(index, bits, Int32Array.from(dependents), trie);
}

/** The walk of computeNodeMask on the matcher's sets. */
function pdaWalk(pda: Pda, trie: TokenTrie, root: number, bits: Uint32Array, dependents: number[]): void {
  const { nodeByte, nodeDepth, nodeEnd, nodeToken, sameBytes } = trie;
  const stack = new Int32Array(trie.maxDepth + 1);
  stack[0] = root;
  const n = trie.nodeCount;
  // The step tables grow while the walk discovers sets: re-read them after a miss only.
  let trans = pda.trans;
  let hasEmpty = pda.hasEmpty;
  let onlyEmpty = pda.onlyEmpty;
  let i = 1;
  while (i < n) {
    const from = stack[nodeDepth[i]! - 1]!;
    const b = nodeByte[i]!;
    let t = trans[from * 256 + b]!;
    if (t < DEAD) {
      t = pda.computeStep(from, b);
      trans = pda.trans;
      hasEmpty = pda.hasEmpty;
      onlyEmpty = pda.onlyEmpty;
    }
    if (t === DEAD) {
      i = nodeEnd[i]!;
      continue;
    }
    for (let tok = nodeToken[i]!; tok >= 0; tok = sameBytes[tok]!) bits[tok >>> 5]! |= 1 << (tok & 31);
    if (hasEmpty[t]) {
      if (nodeEnd[i]! > i + 1) dependents.push(i);
      if (onlyEmpty[t]) {
        i = nodeEnd[i]!;
        continue;
      }
    }
    stack[nodeDepth[i]!] = t;
    i++;
  }
}

/** The walk of computeNodeMask from `root`, a state of a rule without calls, on the rule's automaton. */
function ruleWalk(g: Grammar, trie: TokenTrie, root: number, bits: Uint32Array, dependents: number[]): void {
  const { nodeByte, nodeDepth, nodeEnd, nodeToken, sameBytes } = trie;
  const stack = new Int32Array(trie.maxDepth + 1);
  stack[0] = root;
  const n = trie.nodeCount;
  let i = 1;
  while (i < n) {
    const t = g.byteTarget(stack[nodeDepth[i]! - 1]!, nodeByte[i]!);
    if (t < 0) {
      i = nodeEnd[i]!;
      continue;
    }
    for (let tok = nodeToken[i]!; tok >= 0; tok = sameBytes[tok]!) bits[tok >>> 5]! |= 1 << (tok & 31);
    if (g.accepting[t]) {
      if (nodeEnd[i]! > i + 1) dependents.push(i);
      if (!g.hasBytes(t)) {
        i = nodeEnd[i]!;
        continue;
      }
    }
    stack[nodeDepth[i]!] = t;
    i++;
  }
}

/** A rule's steps over byte classes and the vocabulary's class trie for them. */
export interface ClassWalk {
  readonly rule: ClassRule;
  readonly trie: ClassTrie;
}

/**
 * computeNodeMask for a state of a rule without calls, on its class trie: the tokens of every
 * class path alive from the state, stepping the rule's own table (no matcher sets to intern).
 */
export function classMask(index: TokenIndex, walk: ClassWalk, state: number): NodeMask {
  const { classes, next, ends } = walk.rule;
  const { nodeClass, nodeDepth, nodeEnd, tokenStart, tokens, branchStart, branches } = walk.trie;
  const bits = new Uint32Array(index.words);
  const dependents: number[] = [];
  const stack = new Int32Array(walk.trie.maxDepth + 1);
  stack[0] = state - walk.rule.first;
  const n = walk.trie.nodeCount;
  let i = 1;
  while (i < n) {
    const t = next[stack[nodeDepth[i]! - 1]! * classes + nodeClass[i]!]!;
    if (t < 0) {
      i = nodeEnd[i]!;
      continue;
    }
    for (let k = tokenStart[i]!, end = tokenStart[i + 1]!; k < end; k++) bits[tokens[k]! >>> 5]! |= 1 << (tokens[k]! & 31);
    const e = ends[t]!;
    if (e !== 0) {
      for (let k = branchStart[i]!, end = branchStart[i + 1]!; k < end; k++) dependents.push(branches[k]!);
      if (e === 2) {
        i = nodeEnd[i]!;
        continue;
      }
    }
    stack[nodeDepth[i]!] = t;
    i++;
  }
  return nodeMask(index, bits, Int32Array.from(dependents), index.trie);
}

/** A walk's result, its allowed tokens as ids when they are few. */
function nodeMask(index: TokenIndex, bits: Uint32Array, deps: Int32Array, trie: TokenTrie): NodeMask {
  let count = 0;
  for (let w = 0; w < bits.length; w++) for (let x = bits[w]!; x !== 0; x &= x - 1) count++;
  if (count >= index.words) return { inside: bits, sparse: false, dependents: deps, trie };
  const ids = new Int32Array(count);
  let k = 0;
  for (let w = 0; w < bits.length; w++) {
    for (let word = bits[w]!; word !== 0; word &= word - 1) ids[k++] = (w << 5) + (31 - Math.clz32(word & -word));
  }
  return { inside: ids, sparse: true, dependents: deps, trie };
}

/**
 * How many string characters (see SLICE_EDGES) the rule takes from `root`, whichever they are:
 * then the tokens of the vocabulary's slice that start at most that many are allowed there and the
 * longer ones are not (a length bound), and only the other tokens need a walk. `maxChars` (the
 * longest slice token) when every slice token fits. -1 when the slice does not split so: some
 * strings of string characters die where others of the same length live, the rule may end among
 * them before a bound (a longer token could go on in the caller), or there are too many pairs.
 * Follows (string-automaton state, matcher set) pairs level by level (a level is a character),
 * one byte per run the grammar treats alike.
 */
function sliceReach(pda: Pda, leaf: boolean, root: number, maxChars: number): number {
  const g = pda.grammar;
  const steps = sliceSteps(g);
  // `root` and the sets below are states of the rule's automaton for a rule without calls.
  const step = leaf ? (q: number, b: number) => g.byteTarget(q, b) : (set: number, b: number) => pda.step(set, b);
  const canEnd = leaf ? (q: number) => g.accepting[q] === 1 : (set: number) => pda.hasEmpty[set] === 1;
  const seenBoundary = new Set<number>([root]);
  let boundary = [root];
  let ends = canEnd(root);
  let cycles = false;
  let pairs = 1;
  for (let chars = 0; chars < maxChars; chars++) {
    // Sets between characters after this level's character, and sets inside it (pairs u, set).
    const next: number[] = [];
    const inside: number[] = [];
    const seen = new Set<number>();
    let alive = 0;
    let dead = 0;
    const reached = (u: number, set: number): boolean => {
      const key = set * 8 + u;
      if (seen.has(key)) return true;
      seen.add(key);
      if (canEnd(set)) ends = true;
      if (++pairs > MAX_SLICE_PAIRS) return false;
      if (u === 0) next.push(set);
      else inside.push(u, set);
      return true;
    };
    for (const set of boundary) {
      const edges = steps[0]!;
      for (let e = 0; e < edges.length; e += 2) {
        const t = step(set, edges[e]!);
        if (t < 0) dead++;
        else if ((alive++, !reached(edges[e + 1]!, t))) return -1;
      }
    }
    while (inside.length > 0) {
      const set = inside.pop()!;
      const edges = steps[inside.pop()!]!;
      for (let e = 0; e < edges.length; e += 2) {
        const t = step(set, edges[e]!);
        if (t < 0 || !reached(edges[e + 1]!, t)) return -1;
      }
    }
    // A bound: every string of `chars` characters lives and every longer one dies (a set met again
    // would live on past any bound).
    if (dead > 0) return alive === 0 && !ends && !cycles ? chars : -1;
    boundary = next.filter((set) => !seenBoundary.has(set));
    if (boundary.length < next.length) cycles = true;
    // Every set of the next level was expanded before, and none died: nothing ever will.
    if (boundary.length === 0) return maxChars;
    for (const set of boundary) seenBoundary.add(set);
  }
  return maxChars;
}

const SLICE_STEPS = new WeakMap<Grammar, number[][]>();

/** Per string-automaton state: pairs (byte, next state), one byte per run the grammar treats alike. */
function sliceSteps(g: Grammar): number[][] {
  let steps = SLICE_STEPS.get(g);
  if (steps === undefined) {
    steps = Array.from({ length: 8 }, (): number[] => []);
    for (let e = 0; e < SLICE_EDGES.length; e += 4) {
      for (const b of g.representatives(SLICE_EDGES[e + 1]!, SLICE_EDGES[e + 2]!)) steps[SLICE_EDGES[e]!]!.push(b, SLICE_EDGES[e + 3]!);
    }
    SLICE_STEPS.set(g, steps);
  }
  return steps;
}

/**
 * What the matchers of `grammar` share over the vocabulary of `index`. Masks come as states are
 * reached (a format's or pattern's state walks its class trie, a length-bounded string's takes the
 * slice up to its bound); the class tries, a pass over the vocabulary each, are built here.
 */
export function compiledGrammar(grammar: Grammar, index: TokenIndex): CompiledGrammar {
  const nodeMasks = new NodeMasks(grammar, index);
  for (const rule of grammar.eagerRules) nodeMasks.classWalkOf(rule);
  return { grammar, index, nodeMasks };
}
