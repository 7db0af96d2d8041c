// The pushdown matcher's states, interned so that stepping is a table lookup. A stack is a linked
// list of automaton states (the top is where the innermost rule is; the ones below are where each
// caller resumes), hash-consed into ids; a matcher state is a set of stacks (an ambiguous grammar
// has several), closed under calls and returns, also interned. The step from a set on a byte is
// computed once and remembered, so walking a token trie costs one array read per byte.
import type { Grammar } from './grammar.js';
import { GrammarError } from './errors.js';
import { MAX_STACKS } from './limits.js';

/** The empty stack: the outermost rule has ended. */
export const EMPTY_STACK = 0;
/** A step that no stack survives. */
export const DEAD = -1;
const UNKNOWN = -2;

export class Pda {
  private nodeState = new Int32Array(64);
  private nodeParent = new Int32Array(64);
  private nodes = 1;
  private readonly nodeIds = new Map<number, number>();
  private readonly setIds = new Map<string, number>();
  /** Sets of one stack, by the stack (skips building a key for the common case). */
  private readonly singles = new Map<number, number>();
  /** Members of each set (stack ids, ascending; EMPTY_STACK first when present). */
  readonly members: Int32Array[] = [];
  /** Per set: 1 when it holds the empty stack. */
  hasEmpty = new Uint8Array(16);
  /** Per set: 1 when the empty stack is all it holds (nothing can follow). */
  onlyEmpty = new Uint8Array(16);
  /** Set id * 256 + byte -> set id, DEAD, or UNKNOWN until first asked. */
  trans = new Int32Array(16 * 256).fill(UNKNOWN);
  private readonly stride: number;

  constructor(readonly grammar: Grammar) {
    this.stride = grammar.stateCount + 1;
  }

  /** The stack with `state` on top of `parent`. */
  push(state: number, parent: number): number {
    const key = parent * this.stride + state;
    let id = this.nodeIds.get(key);
    if (id === undefined) {
      id = this.nodes++;
      if (id >= this.nodeState.length) {
        const grow = (a: Int32Array) => {
          const b = new Int32Array(a.length * 2);
          b.set(a);
          return b;
        };
        this.nodeState = grow(this.nodeState);
        this.nodeParent = grow(this.nodeParent);
      }
      this.nodeState[id] = state;
      this.nodeParent[id] = parent;
      this.nodeIds.set(key, id);
    }
    return id;
  }

  top(stack: number): number {
    return this.nodeState[stack]!;
  }

  parent(stack: number): number {
    return this.nodeParent[stack]!;
  }

  get setCount(): number {
    return this.members.length;
  }

  /** The set of stacks reachable from `stacks` by calls and returns alone, interned; DEAD if none. */
  closure(stacks: ArrayLike<number>): number {
    const g = this.grammar;
    // Most steps stay inside a rule: one stack whose top neither calls nor ends its rule.
    if (stacks.length === 1 && stacks[0] !== EMPTY_STACK) {
      const q = this.nodeState[stacks[0]!]!;
      if (!g.accepting[q] && g.callStart[q] === g.callStart[q + 1] && g.hasBytes(q)) {
        let id = this.singles.get(stacks[0]!);
        if (id === undefined) {
          id = this.intern([stacks[0]!]);
          this.singles.set(stacks[0]!, id);
        }
        return id;
      }
    }
    const seen = new Set<number>();
    const out: number[] = [];
    const work: number[] = Array.from(stacks);
    while (work.length > 0) {
      const s = work.pop()!;
      if (seen.has(s)) continue;
      seen.add(s);
      if (seen.size > MAX_STACKS) throw new GrammarError(`the grammar is too ambiguous: more than ${MAX_STACKS} parses are alive at once`);
      if (s === EMPTY_STACK) {
        out.push(s);
        continue;
      }
      const q = this.nodeState[s]!;
      const below = this.nodeParent[s]!;
      if (g.hasBytes(q)) out.push(s);
      if (g.accepting[q]) work.push(below);
      for (let i = g.callStart[q]!, end = g.callStart[q + 1]!; i < end; i++) {
        work.push(this.push(g.ruleStart[g.callRule[i]!]!, this.push(g.callTo[i]!, below)));
      }
    }
    if (out.length === 0) return DEAD;
    out.sort((a, b) => a - b);
    return this.intern(out);
  }

  /** The set after byte b; DEAD when no stack can take it. */
  step(set: number, b: number): number {
    const t = this.trans[set * 256 + b]!;
    return t === UNKNOWN ? this.computeStep(set, b) : t;
  }

  computeStep(set: number, b: number): number {
    const g = this.grammar;
    const next: number[] = [];
    for (const s of this.members[set]!) {
      if (s === EMPTY_STACK) continue;
      const t = g.byteTarget(this.nodeState[s]!, b);
      if (t >= 0) next.push(this.push(t, this.nodeParent[s]!));
    }
    const result = next.length === 0 ? DEAD : this.closure(next);
    this.trans[set * 256 + b] = result;
    return result;
  }

  private intern(members: number[]): number {
    const key = members.join(',');
    let id = this.setIds.get(key);
    if (id !== undefined) return id;
    id = this.members.length;
    this.setIds.set(key, id);
    this.members.push(Int32Array.from(members));
    if (id >= this.hasEmpty.length) {
      const n = this.hasEmpty.length * 2;
      const grow = (a: Uint8Array) => {
        const c = new Uint8Array(n);
        c.set(a);
        return c;
      };
      this.hasEmpty = grow(this.hasEmpty);
      this.onlyEmpty = grow(this.onlyEmpty);
      const t = new Int32Array(n * 256).fill(UNKNOWN);
      t.set(this.trans);
      this.trans = t;
    }
    const empty = members[0] === EMPTY_STACK;
    this.hasEmpty[id] = empty ? 1 : 0;
    this.onlyEmpty[id] = empty && members.length === 1 ? 1 : 0;
    return id;
  }
}
