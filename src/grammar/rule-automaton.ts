// One rule's body as a deterministic automaton over bytes and rule calls: Thompson's construction
// (characters expanded to their UTF-8 byte ranges), then the subset construction, with a call to
// another rule treated as one more input symbol.
import { CALL, EPSILON, type Expr, normalizeRanges } from './expr.js';
import { GrammarError } from './errors.js';
import { MAX_DETERMINIZE_WORK, MAX_DFA_STATES, MAX_NFA_STATES, MAX_REPEAT } from './limits.js';
import { utf8Sequences } from './utf8-ranges.js';

/** A rule's automaton; state 0 is the start. */
export interface RuleAutomaton {
  readonly accepting: boolean[];
  /** Per state: disjoint byte ranges, sorted, as triples lo, hi, target. */
  readonly bytes: number[][];
  /** Per state: pairs rule, target (after the called rule's text). */
  readonly calls: number[][];
}

const utf8 = new TextEncoder();

/** States times refinement rounds minimize() may spend. */
const MAX_MINIMIZE_WORK = 200_000;

class Nfa {
  readonly eps: number[][] = [];
  readonly bytes: number[][] = [];
  readonly calls: number[][] = [];

  state(): number {
    if (this.eps.length >= MAX_NFA_STATES) throw new GrammarError(`the grammar is too large: a rule needs more than ${MAX_NFA_STATES} automaton states`);
    this.eps.push([]);
    this.bytes.push([]);
    this.calls.push([]);
    return this.eps.length - 1;
  }

  /** Adds `e` between `from` and a new state, which it returns. */
  build(e: Expr, from: number): number {
    switch (e.type) {
      case 'literal': {
        let at = from;
        for (const b of utf8.encode(e.text)) {
          const to = this.state();
          this.bytes[at]!.push(b, b, to);
          at = to;
        }
        return at;
      }
      case 'bytes': {
        const to = this.state();
        for (let i = 0; i < e.ranges.length; i += 2) this.bytes[from]!.push(e.ranges[i]!, e.ranges[i + 1]!, to);
        return to;
      }
      case 'chars': {
        const to = this.state();
        const ranges = normalizeRanges(e.ranges);
        for (let i = 0; i < ranges.length; i += 2) {
          for (const seq of utf8Sequences(ranges[i]!, ranges[i + 1]!)) {
            let at = from;
            for (let j = 0; j < seq.length; j += 2) {
              const next = j + 2 === seq.length ? to : this.state();
              this.bytes[at]!.push(seq[j]!, seq[j + 1]!, next);
              at = next;
            }
          }
        }
        return to;
      }
      case 'seq': {
        let at = from;
        for (const item of e.items) at = this.build(item, at);
        return at;
      }
      case 'alt': {
        const to = this.state();
        for (const item of e.items) {
          const start = this.state();
          this.eps[from]!.push(start);
          this.eps[this.build(item, start)]!.push(to);
        }
        return to;
      }
      case 'repeat': {
        const { min, max } = e;
        if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) {
          throw new GrammarError(`a repetition bound of ${max === Infinity ? min : max} is larger than the supported ${MAX_REPEAT}`);
        }
        let at = from;
        for (let i = 0; i < min; i++) at = this.build(e.item, at);
        if (max === Infinity) {
          const loop = this.state();
          this.eps[at]!.push(loop);
          const end = this.build(e.item, loop);
          this.eps[end]!.push(loop);
          return loop;
        }
        const to = this.state();
        for (let i = min; i < max; i++) {
          this.eps[at]!.push(to);
          at = this.build(e.item, at);
        }
        this.eps[at]!.push(to);
        return to;
      }
      case 'graph': {
        const base = this.eps.length;
        for (let i = 0; i < e.states; i++) this.state();
        this.eps[from]!.push(base);
        for (let i = 0; i < e.edges.length; i += 4) {
          const at = base + e.edges[i]!;
          const lo = e.edges[i + 1]!;
          const to = base + e.edges[i + 3]!;
          if (lo === CALL) this.calls[at]!.push(e.edges[i + 2]!, to);
          else if (lo === EPSILON) this.eps[at]!.push(to);
          else this.bytes[at]!.push(lo, e.edges[i + 2]!, to);
        }
        const to = this.state();
        for (const a of e.accepting) this.eps[base + a]!.push(to);
        return to;
      }
      case 'ref': {
        const to = this.state();
        this.calls[from]!.push(e.rule, to);
        return to;
      }
    }
  }

  closure(states: number[]): number[] {
    const seen = new Set<number>(states);
    const work = states.slice();
    while (work.length > 0) {
      for (const t of this.eps[work.pop()!]!) {
        if (!seen.has(t)) {
          seen.add(t);
          work.push(t);
        }
      }
    }
    return [...seen].sort((a, b) => a - b);
  }
}

/** The body of a rule as a deterministic automaton (`stateBudget`: states the grammar may still add). */
export function ruleAutomaton(body: Expr, stateBudget = MAX_DFA_STATES): RuleAutomaton {
  const nfa = new Nfa();
  const start = nfa.state();
  const accept = nfa.build(body, start);
  const out: RuleAutomaton = { accepting: [], bytes: [], calls: [] };
  const ids = new Map<string, number>();
  const sets: number[][] = [];
  const intern = (set: number[]): number => {
    const key = set.join(',');
    let id = ids.get(key);
    if (id === undefined) {
      id = sets.length;
      if (id >= stateBudget) throw new GrammarError(`the grammar is too large: more than ${MAX_DFA_STATES} automaton states`);
      ids.set(key, id);
      sets.push(set);
    }
    return id;
  };
  intern(nfa.closure([start]));
  // Work done so far (set members, edges and call targets looked at): a bound on time for hostile rules
  // (an exponential determinization), not only on the number of states.
  let work = 0;
  for (let d = 0; d < sets.length; d++) {
    const set = sets[d]!;
    work += set.length;
    if (work > MAX_DETERMINIZE_WORK) throw new GrammarError('the grammar is too large: determinizing one of its rules takes too long; simplify it');
    out.accepting.push(set.includes(accept));
    // Byte edges: cut the members' ranges into pieces no member's range straddles.
    const edges: number[] = [];
    const cuts = new Set<number>();
    for (const s of set) {
      const b = nfa.bytes[s]!;
      for (let i = 0; i < b.length; i += 3) {
        edges.push(b[i]!, b[i + 1]!, b[i + 2]!);
        cuts.add(b[i]!);
        cuts.add(b[i + 1]! + 1);
      }
    }
    const points = [...cuts].sort((a, b) => a - b);
    work += edges.length / 3;
    const row: number[] = [];
    for (let p = 0; p + 1 < points.length; p++) {
      const lo = points[p]!;
      const hi = points[p + 1]! - 1;
      const targets: number[] = [];
      for (let i = 0; i < edges.length; i += 3) if (edges[i]! <= lo && hi <= edges[i + 1]!) targets.push(edges[i + 2]!);
      if (targets.length === 0) continue;
      const to = intern(nfa.closure(targets));
      const n = row.length;
      // Neighbouring pieces with one target are one range.
      if (n > 0 && row[n - 1] === to && row[n - 2]! + 1 === lo) row[n - 2] = hi;
      else row.push(lo, hi, to);
    }
    out.bytes.push(row);
    const byRule = new Map<number, number[]>();
    for (const s of set) {
      const c = nfa.calls[s]!;
      for (let i = 0; i < c.length; i += 2) {
        const list = byRule.get(c[i]!) ?? [];
        list.push(c[i + 1]!);
        byRule.set(c[i]!, list);
      }
    }
    const calls: number[] = [];
    for (const [rule, targets] of [...byRule].sort((a, b) => a[0] - b[0])) {
      work += targets.length;
      calls.push(rule, intern(nfa.closure(targets)));
    }
    out.calls.push(calls);
  }
  return minimize(out);
}

/**
 * The automaton with equivalent states merged (Moore's partition refinement): the subset
 * construction of a format or pattern leaves many states that accept the same continuations, and
 * every state with bytes costs the matcher a walk of the vocabulary's trie.
 */
function minimize(a: RuleAutomaton): RuleAutomaton {
  const n = a.accepting.length;
  let cls: number[] = a.accepting.map((acc) => (acc ? 1 : 0));
  let count = new Set(cls).size;
  // Each round costs a pass over the states, and a long chain (a counted repetition) needs as many
  // rounds as it has states: past this much work the automaton stays as it is.
  let budget = MAX_MINIMIZE_WORK;
  for (;;) {
    budget -= n;
    if (budget < 0) return a;
    const ids = new Map<string, number>();
    const next = new Array<number>(n);
    for (let s = 0; s < n; s++) {
      const b = a.bytes[s]!;
      const c = a.calls[s]!;
      let key = `${cls[s]}|`;
      // Neighbouring ranges whose targets are one class are one range (as the merged rows will be).
      for (let i = 0; i < b.length; i += 3) {
        const lo = b[i]!;
        let hi = b[i + 1]!;
        const to = cls[b[i + 2]!];
        while (i + 3 < b.length && b[i + 3] === hi + 1 && cls[b[i + 5]!] === to) {
          i += 3;
          hi = b[i + 1]!;
        }
        key += `${lo},${hi},${to};`;
      }
      key += '|';
      for (let i = 0; i < c.length; i += 2) key += `${c[i]},${cls[c[i + 1]!]};`;
      let id = ids.get(key);
      if (id === undefined) ids.set(key, (id = ids.size));
      next[s] = id;
    }
    cls = next;
    if (ids.size === count) break;
    count = ids.size;
  }
  if (count === n) return a;
  // Number the classes in order of their first state, so the start state stays 0.
  const order = new Map<number, number>();
  for (let s = 0; s < n; s++) if (!order.has(cls[s]!)) order.set(cls[s]!, order.size);
  const out: RuleAutomaton = { accepting: [], bytes: [], calls: [] };
  const done = new Set<number>();
  for (let s = 0; s < n; s++) {
    const c = order.get(cls[s]!)!;
    if (done.has(c)) continue;
    done.add(c);
    out.accepting.push(a.accepting[s]!);
    const row: number[] = [];
    const b = a.bytes[s]!;
    for (let i = 0; i < b.length; i += 3) {
      const to = order.get(cls[b[i + 2]!]!)!;
      const k = row.length;
      if (k > 0 && row[k - 1] === to && row[k - 2]! + 1 === b[i]) row[k - 2] = b[i + 1]!;
      else row.push(b[i]!, b[i + 1]!, to);
    }
    out.bytes.push(row);
    const calls = a.calls[s]!.slice();
    for (let i = 1; i < calls.length; i += 2) calls[i] = order.get(cls[calls[i]!]!)!;
    out.calls.push(calls);
  }
  return out;
}
