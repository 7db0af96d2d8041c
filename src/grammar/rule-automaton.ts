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

/** States times symbols (byte runs and called rules) minimize() may take on; larger automata stay as they are. */
const MAX_MINIMIZE_WORK = 2_000_000;

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

  /** Per state: the last closure() that reached it (so a closure needs no set of its own). */
  private mark = new Int32Array(64);
  private stamp = 0;

  /** The states reachable from `states` by epsilon edges, ascending. */
  closure(states: ArrayLike<number>): Int32Array {
    if (this.mark.length < this.eps.length) this.mark = new Int32Array(this.eps.length * 2);
    const mark = this.mark;
    const stamp = ++this.stamp;
    const out: number[] = [];
    for (let i = 0; i < states.length; i++) {
      const s = states[i]!;
      if (mark[s] !== stamp) {
        mark[s] = stamp;
        out.push(s);
      }
    }
    for (let k = 0; k < out.length; k++) {
      for (const t of this.eps[out[k]!]!) {
        if (mark[t] !== stamp) {
          mark[t] = stamp;
          out.push(t);
        }
      }
    }
    return Int32Array.from(out).sort();
  }
}

/** The body of a rule as a deterministic automaton (`stateBudget`: states the grammar may still add). */
export function ruleAutomaton(body: Expr, stateBudget = MAX_DFA_STATES): RuleAutomaton {
  const nfa = new Nfa();
  const start = nfa.state();
  const accept = nfa.build(body, start);
  const out: RuleAutomaton = { accepting: [], bytes: [], calls: [] };
  const ids = new Map<string, number>();
  const sets: Int32Array[] = [];
  const intern = (set: Int32Array): number => {
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
  // Scratch space reused for every state (the construction of a long counted string makes thousands).
  const edges: number[] = [];
  const cuts: number[] = [];
  const targets: number[] = [];
  for (let d = 0; d < sets.length; d++) {
    const set = sets[d]!;
    work += set.length;
    if (work > MAX_DETERMINIZE_WORK) throw new GrammarError('the grammar is too large: determinizing one of its rules takes too long; simplify it');
    out.accepting.push(set.includes(accept));
    // Byte edges: cut the members' ranges into pieces no member's range straddles.
    edges.length = 0;
    cuts.length = 0;
    for (const s of set) {
      const b = nfa.bytes[s]!;
      for (let i = 0; i < b.length; i += 3) {
        edges.push(b[i]!, b[i + 1]!, b[i + 2]!);
        cuts.push(b[i]!, b[i + 1]! + 1);
      }
    }
    const points = Int32Array.from(cuts).sort();
    work += edges.length / 3;
    const row: number[] = [];
    for (let p = 0; p + 1 < points.length; p++) {
      const lo = points[p]!;
      const hi = points[p + 1]! - 1;
      if (hi < lo) continue; // a cut made twice
      targets.length = 0;
      for (let i = 0; i < edges.length; i += 3) if (edges[i]! <= lo && hi <= edges[i + 1]!) targets.push(edges[i + 2]!);
      if (targets.length === 0) continue;
      const to = intern(nfa.closure(targets));
      const n = row.length;
      // Neighbouring pieces with one target are one range.
      if (n > 0 && row[n - 1] === to && row[n - 2]! + 1 === lo) row[n - 2] = hi;
      else row.push(lo, hi, to);
    }
    out.bytes.push(row);
    if (!set.some((s) => nfa.calls[s]!.length > 0)) {
      out.calls.push([]);
      continue;
    }
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
    for (const [rule, callTargets] of [...byRule].sort((a, b) => a[0] - b[0])) {
      work += callTargets.length;
      calls.push(rule, intern(nfa.closure(callTargets)));
    }
    out.calls.push(calls);
  }
  return minimize(out);
}

/**
 * The automaton with equivalent states merged (Hopcroft's partition refinement, O(k n log n) for
 * n states and k symbols): the subset construction of a format or pattern leaves many states that
 * accept the same continuations, and every state with bytes costs the matcher a walk of the
 * vocabulary's trie. A missing edge goes to a sink state of its own, so two states are merged
 * exactly when they have the same edges up to the merging.
 */
function minimize(a: RuleAutomaton): RuleAutomaton {
  const n = a.accepting.length;
  const sink = n;
  const size = n + 1;
  // Symbols: runs of bytes every state treats alike, then each called rule.
  const cuts = new Set<number>([0]);
  for (const row of a.bytes) {
    for (let i = 0; i < row.length; i += 3) {
      cuts.add(row[i]!);
      if (row[i + 1]! < 255) cuts.add(row[i + 1]! + 1);
    }
  }
  const points = [...cuts].sort((x, y) => x - y);
  const runOf = new Int32Array(256);
  for (let j = 0; j < points.length; j++) runOf.fill(j, points[j]!, j + 1 < points.length ? points[j + 1]! : 256);
  const callees = [...new Set(a.calls.flatMap((c) => c.filter((_, i) => i % 2 === 0)))];
  if (size * (points.length + callees.length) > MAX_MINIMIZE_WORK) return a;
  const columns: Int32Array[] = [];
  const seen = new Set<string>();
  const addColumn = (column: Int32Array): void => {
    const key = column.join(',');
    if (!seen.has(key)) {
      seen.add(key);
      columns.push(column);
    }
  };
  const runs = points.map(() => new Int32Array(size).fill(sink));
  a.bytes.forEach((row, s) => {
    for (let i = 0; i < row.length; i += 3) for (let j = runOf[row[i]!]!; j <= runOf[row[i + 1]!]!; j++) runs[j]![s] = row[i + 2]!;
  });
  runs.forEach(addColumn);
  for (const rule of callees) {
    const column = new Int32Array(size).fill(sink);
    a.calls.forEach((c, s) => {
      for (let i = 0; i < c.length; i += 2) if (c[i] === rule) column[s] = c[i + 1]!;
    });
    addColumn(column);
  }
  const k = columns.length;
  // Predecessors per symbol and target: from[fromStart[x * size + t] .. fromStart[x * size + t + 1]].
  const fromStart = new Int32Array(k * size + 1);
  columns.forEach((col, x) => {
    for (let s = 0; s < size; s++) fromStart[x * size + col[s]! + 1]!++;
  });
  for (let i = 0; i < k * size; i++) fromStart[i + 1]! += fromStart[i]!;
  const from = new Int32Array(k * size);
  const fill = fromStart.slice(0, k * size);
  columns.forEach((col, x) => {
    for (let s = 0; s < size; s++) from[fill[x * size + col[s]!]!++] = s;
  });
  // Blocks are ranges of `elems`; a block's states being split off are moved to its front.
  const elems = new Int32Array(size);
  const pos = new Int32Array(size);
  const blockOf = new Int32Array(size);
  const start = new Int32Array(size);
  const end = new Int32Array(size);
  const marked = new Int32Array(size);
  let blocks = 0;
  let e = 0;
  for (const group of [0, 1, 2]) {
    const first = e;
    for (let s = 0; s < size; s++) {
      if ((s === sink ? 2 : a.accepting[s] ? 1 : 0) !== group) continue;
      elems[e] = s;
      pos[s] = e++;
      blockOf[s] = blocks;
    }
    if (e > first) {
      start[blocks] = first;
      end[blocks++] = e;
    }
  }
  const pending = new Uint8Array(size * k);
  const work: number[] = [];
  for (let b = 0; b < blocks; b++) {
    for (let x = 0; x < k; x++) {
      pending[b * k + x] = 1;
      work.push(b, x);
    }
  }
  const preds: number[] = [];
  const touched: number[] = [];
  while (work.length > 0) {
    const x = work.pop()!;
    const splitter = work.pop()!;
    pending[splitter * k + x] = 0;
    preds.length = 0;
    for (let i = start[splitter]!; i < end[splitter]!; i++) {
      const t = elems[i]!;
      for (let j = fromStart[x * size + t]!; j < fromStart[x * size + t + 1]!; j++) preds.push(from[j]!);
    }
    touched.length = 0;
    for (const s of preds) {
      const b = blockOf[s]!;
      const front = start[b]! + marked[b]!;
      if (pos[s]! < front) continue;
      const other = elems[front]!;
      elems[pos[s]!] = other;
      pos[other] = pos[s]!;
      elems[front] = s;
      pos[s] = front;
      if (marked[b]!++ === 0) touched.push(b);
    }
    for (const b of touched) {
      const m = marked[b]!;
      marked[b] = 0;
      if (m === end[b]! - start[b]!) continue;
      const nb = blocks++;
      start[nb] = start[b]!;
      end[nb] = start[b]! + m;
      start[b] = end[nb]!;
      for (let i = start[nb]!; i < end[nb]!; i++) blockOf[elems[i]!] = nb;
      const smaller = m <= end[b]! - start[b]! ? nb : b;
      for (let y = 0; y < k; y++) {
        const target = pending[b * k + y] ? nb : smaller;
        if (pending[target * k + y]) continue;
        pending[target * k + y] = 1;
        work.push(target, y);
      }
    }
  }
  const cls = Array.from(blockOf.subarray(0, n));
  const count = new Set(cls).size;
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
