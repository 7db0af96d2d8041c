// A grammar matcher over a model's vocabulary: which tokens may come next (a bitset), and the
// state after a token. The mask for a state is the union, over its stacks, of the innermost
// state's kept mask (NodeMasks) and the walk of its dependent subtrees from the caller's state;
// those walks and whole masks are remembered per state, so a long string value costs one copy
// per token. Matchers of one grammar share the interned states, step tables and remembered masks
// (MatchTables), so a schema seen before costs table reads from its first token.
import type { Grammar } from './grammar.js';
import type { NodeMasks } from './node-masks.js';
import { DEAD, EMPTY_STACK, Pda } from './pda.js';
import type { TokenIndex } from './token-index.js';
import type { TokenTrie } from './token-trie.js';

/** What a matcher shares with the other matchers of its grammar. */
export interface CompiledGrammar {
  readonly grammar: Grammar;
  readonly index: TokenIndex;
  readonly nodeMasks: NodeMasks;
  /** Set by the matchers (see tablesOf). */
  tables?: MatchTables;
}

/** Whole masks remembered per grammar, most recent kept (each is vocabSize / 8 bytes). */
const MASK_MEMO = 64;
/** Interned sets a grammar's shared tables may hold before new matchers start fresh ones. */
const MAX_SHARED_SETS = 50_000;

/** The interned matcher states of one grammar, their step tables, and the masks computed from them. */
class MatchTables {
  readonly pda: Pda;
  readonly initial: number;
  readonly masks = new Map<number, Uint32Array>();
  /** Per innermost state, per caller set: the dependent tokens. */
  readonly dependentTokens = new Map<number, Map<number, Int32Array>>();

  constructor(grammar: Grammar) {
    this.pda = new Pda(grammar);
    this.initial = this.pda.closure([this.pda.push(grammar.ruleStart[grammar.root]!, EMPTY_STACK)]);
  }
}

function tablesOf(compiled: CompiledGrammar): MatchTables {
  let t = compiled.tables;
  // Matchers keep the tables they started with; a grammar whose tables grew large gets fresh ones.
  if (t === undefined || t.pda.setCount > MAX_SHARED_SETS) compiled.tables = t = new MatchTables(compiled.grammar);
  return t;
}

export class GrammarMatcher {
  readonly vocabSize: number;
  private readonly pda: Pda;
  private readonly initial: number;
  private current: number;
  private ended = false;
  private readonly out: Uint32Array;
  private readonly masks: Map<number, Uint32Array>;
  private readonly dependentTokens: Map<number, Map<number, Int32Array>>;
  private readonly walkStack: Int32Array;
  private readonly found: number[] = [];

  constructor(readonly compiled: CompiledGrammar) {
    const { index } = compiled;
    this.vocabSize = index.vocabSize;
    const tables = tablesOf(compiled);
    this.pda = tables.pda;
    this.initial = tables.initial;
    this.masks = tables.masks;
    this.dependentTokens = tables.dependentTokens;
    this.current = this.initial;
    this.out = new Uint32Array(index.words);
    this.walkStack = new Int32Array(index.maxDepth + 1);
  }

  /** A new matcher for the same grammar, at its start (it shares the computed masks). */
  clone(): GrammarMatcher {
    return new GrammarMatcher(this.compiled);
  }

  /**
   * The tokens that may come next: bit `i % 32` of word `i >> 5` is set when token i may. The
   * end-of-generation tokens are set exactly when the grammar can end here. The array is the
   * matcher's own and is rewritten by the next call.
   */
  allowed(): Uint32Array {
    const out = this.out;
    if (this.ended) {
      out.fill(0);
      return out;
    }
    const memo = this.masks.get(this.current);
    if (memo !== undefined) {
      out.set(memo);
      return out;
    }
    this.computeMask(out);
    if (this.masks.size >= MASK_MEMO) this.masks.delete(this.masks.keys().next().value!);
    this.masks.set(this.current, out.slice());
    return out;
  }

  /** Takes token `id`: false (and nothing changes) when the grammar does not allow it here. */
  accept(id: number): boolean {
    if (this.ended || !Number.isInteger(id) || id < 0 || id >= this.vocabSize) return false;
    const index = this.compiled.index;
    const bytes = index.bytes[id];
    if (bytes === null || bytes === undefined) {
      if (!index.eog.includes(id) || !this.pda.hasEmpty[this.current]) return false;
      this.ended = true;
      return true;
    }
    return this.acceptBytes(bytes);
  }

  /** Takes raw bytes (text that arrived outside a token boundary); false and no change if refused. */
  acceptBytes(bytes: ArrayLike<number>): boolean {
    if (this.ended) return false;
    let s = this.current;
    for (let i = 0; i < bytes.length; i++) {
      s = this.pda.step(s, bytes[i]!);
      if (s === DEAD) return false;
    }
    this.current = s;
    return true;
  }

  /** Whether the text so far is a whole match (end of generation is allowed now). */
  canEnd(): boolean {
    return this.pda.hasEmpty[this.current] === 1;
  }

  /** Whether the match is over: an end-of-generation token was taken, or nothing but the end can follow. */
  isComplete(): boolean {
    return this.ended || this.pda.onlyEmpty[this.current] === 1;
  }

  /** Back to the start of the grammar. */
  reset(): void {
    this.current = this.initial;
    this.ended = false;
  }

  private computeMask(out: Uint32Array): void {
    out.fill(0);
    const pda = this.pda;
    const members = pda.members[this.current]!;
    for (let k = 0; k < members.length; k++) {
      const s = members[k]!;
      if (s === EMPTY_STACK) continue;
      const q = pda.top(s);
      const m = this.compiled.nodeMasks.get(q);
      const inside = m.inside;
      if (m.sparse) {
        for (let i = 0; i < inside.length; i++) out[inside[i]! >>> 5]! |= 1 << (inside[i]! & 31);
      } else {
        for (let w = 0; w < inside.length; w++) out[w]! |= inside[w]!;
      }
      if (m.dependents.length === 0) continue;
      const caller = pda.closure([pda.parent(s)]);
      const ids = this.dependents(q, caller, m.dependents, m.trie);
      for (let i = 0; i < ids.length; i++) out[ids[i]! >>> 5]! |= 1 << (ids[i]! & 31);
    }
    if (pda.hasEmpty[this.current]) for (const id of this.compiled.index.eog) out[id >>> 5]! |= 1 << (id & 31);
  }

  /** The tokens that leave state q's rule partway (at the trie nodes `nodes`) and go on in `caller`. */
  private dependents(q: number, caller: number, nodes: Int32Array, trie: TokenTrie): Int32Array {
    let byCaller = this.dependentTokens.get(q);
    if (byCaller === undefined) this.dependentTokens.set(q, (byCaller = new Map()));
    const known = byCaller.get(caller);
    if (known !== undefined) return known;
    const found = this.found;
    found.length = 0;
    if (caller !== DEAD) {
      const pda = this.pda;
      const { nodeByte, nodeDepth, nodeEnd, nodeToken, sameBytes } = trie;
      const stack = this.walkStack;
      for (let k = 0; k < nodes.length; k++) {
        const node = nodes[k]!;
        stack[nodeDepth[node]!] = caller;
        const end = nodeEnd[node]!;
        let i = node + 1;
        while (i < end) {
          const from = stack[nodeDepth[i]! - 1]!;
          const b = nodeByte[i]!;
          let t = pda.trans[from * 256 + b]!;
          if (t < DEAD) t = pda.computeStep(from, b);
          if (t === DEAD) {
            i = nodeEnd[i]!;
            continue;
          }
          for (let tok = nodeToken[i]!; tok >= 0; tok = sameBytes[tok]!) found.push(tok);
          if (pda.onlyEmpty[t]) {
            i = nodeEnd[i]!;
            continue;
          }
          stack[nodeDepth[i]!] = t;
          i++;
        }
      }
    }
    const ids = Int32Array.from(found);
    byCaller.set(caller, ids);
    return ids;
  }
}
