// Operations on the regular part of grammars: a rule-free expression as one deterministic
// automaton, and the intersection of two (how a pattern meets a length limit, or a lower bound
// meets an upper bound and a multipleOf).
import type { Expr } from './expr.js';
import { GrammarError } from './errors.js';
import { MAX_DFA_STATES } from './limits.js';
import { ruleAutomaton } from './rule-automaton.js';

/** The text both expressions match (neither may call rules), as a ready automaton. */
export function intersect(a: Expr, b: Expr): Expr {
  const x = ruleAutomaton(a);
  const y = ruleAutomaton(b);
  if (x.calls.some((c) => c.length > 0) || y.calls.some((c) => c.length > 0)) {
    throw new GrammarError('only expressions without rule references can be intersected');
  }
  const ids = new Map<number, number>();
  const pairs: number[] = [];
  const id = (p: number, q: number): number => {
    const key = p * y.accepting.length + q;
    let i = ids.get(key);
    if (i === undefined) {
      i = pairs.length / 2;
      if (i >= MAX_DFA_STATES) throw new GrammarError(`the grammar is too large: an intersection needs more than ${MAX_DFA_STATES} states`);
      ids.set(key, i);
      pairs.push(p, q);
    }
    return i;
  };
  id(0, 0);
  const edges: number[] = [];
  const accepting: number[] = [];
  for (let s = 0; s < pairs.length / 2; s++) {
    const p = pairs[2 * s]!;
    const q = pairs[2 * s + 1]!;
    if (x.accepting[p] && y.accepting[q]) accepting.push(s);
    const ex = x.bytes[p]!;
    const ey = y.bytes[q]!;
    for (let i = 0; i < ex.length; i += 3) {
      for (let j = 0; j < ey.length; j += 3) {
        const lo = Math.max(ex[i]!, ey[j]!);
        const hi = Math.min(ex[i + 1]!, ey[j + 1]!);
        if (lo <= hi) edges.push(s, lo, hi, id(ex[i + 2]!, ey[j + 2]!));
      }
    }
  }
  return { type: 'graph', states: pairs.length / 2, edges, accepting };
}

/** Whether an expression (without rule references) matches exactly this text. */
export function matchesText(e: Expr, text: string): boolean {
  const a = ruleAutomaton(e);
  let s = 0;
  for (const b of new TextEncoder().encode(text)) {
    const row = a.bytes[s]!;
    let next = -1;
    for (let i = 0; i < row.length; i += 3) if (b >= row[i]! && b <= row[i + 1]!) next = row[i + 2]!;
    if (next < 0) return false;
    s = next;
  }
  return a.accepting[s]!;
}
