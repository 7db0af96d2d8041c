// A grammar ready for matching: every rule's automaton in flat typed arrays indexed by a global
// state id, trimmed so that every state left can still reach the end of its rule (so a matcher
// that is alive can always finish), checked for left recursion (which a pushdown matcher cannot
// run), and with a canonical signature per rule so token masks can be shared across grammars.
import type { Expr, GrammarDefinition } from './expr.js';
import { GrammarError } from './errors.js';
import { MAX_DFA_STATES, MAX_RULES } from './limits.js';
import { ruleAutomaton } from './rule-automaton.js';

export class Grammar {
  readonly ruleNames: readonly string[];
  /** Rules whose class tries are built when the grammar is compiled (see GrammarRule.eager). */
  readonly eagerRules: readonly number[];
  readonly root: number;
  /** First global state of each rule (its start state). */
  readonly ruleStart: Int32Array;
  readonly ruleOf: Int32Array;
  readonly accepting: Uint8Array;
  /** Byte edges of state s: indices byteStart[s] .. byteStart[s + 1] of byteLo, byteHi, byteTo. */
  readonly byteStart: Int32Array;
  readonly byteLo: Uint8Array;
  readonly byteHi: Uint8Array;
  readonly byteTo: Int32Array;
  /** Call edges of state s: indices callStart[s] .. callStart[s + 1] of callRule, callTo. */
  readonly callStart: Int32Array;
  readonly callRule: Int32Array;
  readonly callTo: Int32Array;
  private readonly signatures = new Map<number, string | null>();

  constructor(def: GrammarDefinition) {
    const { rules, root } = def;
    if (rules.length === 0 || rules.length > MAX_RULES) throw new GrammarError(`a grammar needs 1 to ${MAX_RULES} rules, got ${rules.length}`);
    if (!Number.isInteger(root) || root < 0 || root >= rules.length) throw new GrammarError(`the root rule ${root} does not exist`);
    this.ruleNames = rules.map((r) => r.name);
    this.eagerRules = rules.flatMap((r, i) => (r.eager ? [i] : []));
    this.root = root;
    const autos = [];
    let total = 0;
    for (const rule of rules) {
      const a = cachedAutomaton(rule.body, MAX_DFA_STATES - total);
      total += a.accepting.length;
      autos.push(a);
    }
    this.ruleStart = new Int32Array(rules.length);
    this.ruleOf = new Int32Array(total);
    this.accepting = new Uint8Array(total);
    this.byteStart = new Int32Array(total + 1);
    this.callStart = new Int32Array(total + 1);
    let base = 0;
    let nBytes = 0;
    let nCalls = 0;
    autos.forEach((a, r) => {
      this.ruleStart[r] = base;
      for (let s = 0; s < a.accepting.length; s++) {
        this.ruleOf[base + s] = r;
        nBytes += a.bytes[s]!.length / 3;
        nCalls += a.calls[s]!.length / 2;
      }
      base += a.accepting.length;
    });
    for (const a of autos) {
      for (const row of a.calls) {
        for (let i = 0; i < row.length; i += 2) {
          if (!Number.isInteger(row[i]) || row[i]! < 0 || row[i]! >= rules.length) throw new GrammarError(`a rule refers to rule ${row[i]}, which does not exist`);
        }
      }
    }
    this.byteLo = new Uint8Array(nBytes);
    this.byteHi = new Uint8Array(nBytes);
    this.byteTo = new Int32Array(nBytes);
    this.callRule = new Int32Array(nCalls);
    this.callTo = new Int32Array(nCalls);
    const live = liveStates(autos, root, rules.map((r) => r.name));
    let s = 0;
    let bi = 0;
    let ci = 0;
    autos.forEach((a, r) => {
      const b0 = this.ruleStart[r]!;
      for (let local = 0; local < a.accepting.length; local++, s++) {
        this.accepting[s] = a.accepting[local] ? 1 : 0;
        this.byteStart[s] = bi;
        const row = a.bytes[local]!;
        for (let i = 0; i < row.length; i += 3) {
          if (!live.state[r]![row[i + 2]!]) continue;
          this.byteLo[bi] = row[i]!;
          this.byteHi[bi] = row[i + 1]!;
          this.byteTo[bi++] = b0 + row[i + 2]!;
        }
        this.callStart[s] = ci;
        const calls = a.calls[local]!;
        for (let i = 0; i < calls.length; i += 2) {
          if (!live.rule[calls[i]!] || !live.state[r]![calls[i + 1]!]) continue;
          this.callRule[ci] = calls[i]!;
          this.callTo[ci++] = b0 + calls[i + 1]!;
        }
      }
    });
    this.byteStart[total] = bi;
    this.callStart[total] = ci;
    checkLeftRecursion(this);
  }

  get stateCount(): number {
    return this.accepting.length;
  }

  /** The global states of a rule. */
  statesOf(rule: number): [first: number, end: number] {
    return [this.ruleStart[rule]!, rule + 1 < this.ruleStart.length ? this.ruleStart[rule + 1]! : this.stateCount];
  }

  private cuts: number[] | null = null;

  /**
   * One byte per run of bytes that every edge of the grammar treats alike, within lo..hi: the
   * matcher steps the same way on all bytes of a run, so checking one checks them all.
   */
  representatives(lo: number, hi: number): number[] {
    if (this.cuts === null) {
      const isCut = new Uint8Array(257);
      isCut[0] = 1;
      for (let i = 0; i < this.byteLo.length; i++) {
        isCut[this.byteLo[i]!] = 1;
        isCut[this.byteHi[i]! + 1] = 1;
      }
      this.cuts = [];
      for (let b = 0; b < 256; b++) if (isCut[b]) this.cuts.push(b);
    }
    const out = [lo];
    for (const c of this.cuts) if (c > lo && c <= hi) out.push(c);
    return out;
  }

  /** The state after byte b from state s, or -1. */
  byteTarget(s: number, b: number): number {
    for (let i = this.byteStart[s]!, end = this.byteStart[s + 1]!; i < end; i++) {
      if (b >= this.byteLo[i]! && b <= this.byteHi[i]!) return this.byteTo[i]!;
    }
    return -1;
  }

  hasBytes(s: number): boolean {
    return this.byteStart[s + 1]! > this.byteStart[s]!;
  }

  /**
   * A text that is equal for two rules exactly when everything reachable from them (their states,
   * edges and the rules they call, recursively) is the same up to numbering: token masks computed
   * for a state of one hold for the same state of the other. Null when it would be longer than
   * `limit` characters (a big one-off rule is not worth sharing, nor spelling out).
   */
  ruleSignature(rule: number, limit = Infinity): string | null {
    let sig = this.signatures.get(rule);
    if (sig !== undefined) return sig;
    if (this.signatureAtLeast(rule, limit) > limit) {
      this.signatures.set(rule, null);
      return null;
    }
    const order = [rule];
    const index = new Map([[rule, 0]]);
    const parts: string[] = [];
    let length = 0;
    for (let k = 0; k < order.length; k++) {
      const r = order[k]!;
      const first = this.ruleStart[r]!;
      const last = r + 1 < this.ruleStart.length ? this.ruleStart[r + 1]! : this.stateCount;
      parts.push(`R${last - first}`);
      for (let s = first; s < last; s++) {
        let p = this.accepting[s] ? 'A' : 'N';
        for (let i = this.byteStart[s]!; i < this.byteStart[s + 1]!; i++) p += `${this.byteLo[i]}-${this.byteHi[i]}>${this.byteTo[i]! - first};`;
        for (let i = this.callStart[s]!; i < this.callStart[s + 1]!; i++) {
          const callee = this.callRule[i]!;
          let ci = index.get(callee);
          if (ci === undefined) {
            ci = order.length;
            index.set(callee, ci);
            order.push(callee);
          }
          p += `c${ci}>${this.callTo[i]! - first};`;
        }
        parts.push(p);
        length += p.length + 1;
        if (length > limit) {
          this.signatures.set(rule, null);
          return null;
        }
      }
    }
    sig = parts.join('|');
    this.signatures.set(rule, sig);
    return sig;
  }
  /**
   * A lower bound on the length of ruleSignature(rule), counting two characters per state and five
   * per edge of the rules it reaches, stopping past `limit`: a big one-off rule (an object with
   * many properties, a long counted string) is refused without spelling it out.
   */
  private signatureAtLeast(rule: number, limit: number): number {
    const seen = new Set([rule]);
    const work = [rule];
    let length = 0;
    while (work.length > 0 && length <= limit) {
      const [first, end] = this.statesOf(work.pop()!);
      length += 2 * (end - first) + 5 * (this.byteStart[end]! - this.byteStart[first]! + this.callStart[end]! - this.callStart[first]!);
      for (let i = this.callStart[first]!; i < this.callStart[end]!; i++) {
        const callee = this.callRule[i]!;
        if (!seen.has(callee)) {
          seen.add(callee);
          work.push(callee);
        }
      }
    }
    return length;
  }

}

/** Rule automata kept across grammars, by the text of the rule's body (shared pieces recur in every schema). */
const AUTOMATA = new Map<string, ReturnType<typeof ruleAutomaton>>();
const MAX_AUTOMATA = 512;

/** Rule bodies larger than this (expression nodes and edges) are not worth a key's cost. */
const MAX_CACHED_BODY = 50_000;

function bodySize(e: Expr, limit: number): number {
  switch (e.type) {
    case 'seq': case 'alt': {
      let n = 1;
      for (const item of e.items) if ((n += bodySize(item, limit - n)) > limit) break;
      return n;
    }
    case 'repeat': return 1 + bodySize(e.item, limit);
    case 'graph': return 1 + e.edges.length / 4;
    default: return 1;
  }
}

function cachedAutomaton(body: Expr, budget: number): ReturnType<typeof ruleAutomaton> {
  if (bodySize(body, MAX_CACHED_BODY) > MAX_CACHED_BODY) return ruleAutomaton(body, budget);
  const key = JSON.stringify(body, (_k, v: unknown) => (v === Infinity ? 'inf' : v));
  let a = AUTOMATA.get(key);
  if (a === undefined) {
    a = ruleAutomaton(body, budget);
    if (AUTOMATA.size >= MAX_AUTOMATA) AUTOMATA.delete(AUTOMATA.keys().next().value!);
  } else {
    AUTOMATA.delete(key);
    if (a.accepting.length > budget) throw new GrammarError(`the grammar is too large: more than ${MAX_DFA_STATES} automaton states`);
  }
  AUTOMATA.set(key, a);
  return a;
}

interface Liveness {
  /** Rules that can match some text. */
  rule: boolean[];
  /** Per rule, per local state: can still reach the rule's end. */
  state: boolean[][];
}

function liveStates(autos: ReturnType<typeof ruleAutomaton>[], root: number, names: string[]): Liveness {
  const rule = autos.map(() => false);
  const state = autos.map((a) => a.accepting.slice());
  for (let changed = true; changed;) {
    changed = false;
    autos.forEach((a, r) => {
      const live = state[r]!;
      for (let s = a.accepting.length - 1; s >= 0; s--) {
        if (live[s]) continue;
        const b = a.bytes[s]!;
        let ok = false;
        for (let i = 2; i < b.length && !ok; i += 3) ok = live[b[i]!]!;
        const c = a.calls[s]!;
        for (let i = 0; i < c.length && !ok; i += 2) ok = rule[c[i]!]! && live[c[i + 1]!]!;
        if (ok) {
          live[s] = true;
          changed = true;
        }
      }
      if (!rule[r] && live[0]) {
        rule[r] = true;
        changed = true;
      }
    });
  }
  if (!rule[root]) throw new GrammarError(`the grammar matches no text: its root rule '${names[root]}' can never be completed`);
  return { rule, state };
}

/** Rules whose text may be empty. */
function nullableRules(g: Grammar): boolean[] {
  const n = g.ruleStart.length;
  const nullable = new Array<boolean>(n).fill(false);
  for (let changed = true; changed;) {
    changed = false;
    for (let r = 0; r < n; r++) {
      if (!nullable[r] && reachesEndWithoutBytes(g, g.ruleStart[r]!, nullable)) {
        nullable[r] = true;
        changed = true;
      }
    }
  }
  return nullable;
}

/** The states reachable from s without consuming a byte (through calls to nullable rules). */
function nullMoves(g: Grammar, s: number, nullable: boolean[]): number[] {
  const seen = new Set([s]);
  const work = [s];
  while (work.length > 0) {
    const q = work.pop()!;
    for (let i = g.callStart[q]!; i < g.callStart[q + 1]!; i++) {
      const t = g.callTo[i]!;
      if (nullable[g.callRule[i]!] && !seen.has(t)) {
        seen.add(t);
        work.push(t);
      }
    }
  }
  return [...seen];
}

function reachesEndWithoutBytes(g: Grammar, s: number, nullable: boolean[]): boolean {
  return nullMoves(g, s, nullable).some((q) => g.accepting[q] === 1);
}

/** A rule that can call itself before consuming a byte would make the matcher's stack grow forever. */
function checkLeftRecursion(g: Grammar): void {
  const nullable = nullableRules(g);
  const n = g.ruleStart.length;
  const leftCalls: number[][] = [];
  for (let r = 0; r < n; r++) {
    const callees = new Set<number>();
    for (const q of nullMoves(g, g.ruleStart[r]!, nullable)) {
      for (let i = g.callStart[q]!; i < g.callStart[q + 1]!; i++) callees.add(g.callRule[i]!);
    }
    leftCalls.push([...callees]);
  }
  const color = new Uint8Array(n);
  const path: number[] = [];
  const visit = (r: number): void => {
    color[r] = 1;
    path.push(r);
    for (const c of leftCalls[r]!) {
      if (color[c] === 1) {
        const cycle = [...path.slice(path.indexOf(c)), c].map((x) => g.ruleNames[x]).join(' -> ');
        throw new GrammarError(`the grammar is left-recursive (${cycle}): a rule calls itself before matching any text; rewrite it with repetition`);
      }
      if (color[c] === 0) visit(c);
    }
    path.pop();
    color[r] = 2;
  };
  for (let r = 0; r < n; r++) if (color[r] === 0) visit(r);
}
