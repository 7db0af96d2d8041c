// The one grammar form every front end (JSON Schema, GBNF, regex) compiles to: rules whose bodies
// are regular expressions over characters and bytes that may call other rules. Characters are
// Unicode code points, matched as their UTF-8 bytes, so tokens that hold part of a character are
// matched byte by byte.

export type Expr =
  /** One byte in the ranges (pairs lo, hi, inclusive). */
  | { readonly type: 'bytes'; readonly ranges: readonly number[] }
  /** One character whose code point is in the ranges (pairs lo, hi, inclusive; surrogates never match). */
  | { readonly type: 'chars'; readonly ranges: readonly number[] }
  /** Exactly this text (its UTF-8 bytes). */
  | { readonly type: 'literal'; readonly text: string }
  | { readonly type: 'seq'; readonly items: readonly Expr[] }
  /** Any one of the items; no items matches nothing. */
  | { readonly type: 'alt'; readonly items: readonly Expr[] }
  /** `min` to `max` repetitions (max may be Infinity). */
  | { readonly type: 'repeat'; readonly item: Expr; readonly min: number; readonly max: number }
  /** The text of another rule. */
  | { readonly type: 'ref'; readonly rule: number }
  /**
   * An automaton built by code (an intersection, an object's optional properties): `states`
   * states, start 0, edges as quadruples from, lo, hi, to, where lo >= 0 is a byte range lo..hi,
   * lo = CALL calls rule hi, and lo = EPSILON moves without input; and the accepting states.
   */
  | { readonly type: 'graph'; readonly states: number; readonly edges: readonly number[]; readonly accepting: readonly number[] };

/** Edge kinds of a 'graph' expression besides byte ranges. */
export const CALL = -1;
export const EPSILON = -2;

export interface GrammarRule {
  readonly name: string;
  readonly body: Expr;
  /**
   * A regular piece with many states (a format, a pattern, a length bound): its states' masks walk
   * a trie of the vocabulary by the rule's byte classes when the rule takes ASCII only (see
   * ClassTrie), built when the grammar is compiled, so a state's first mask costs a small walk.
   */
  readonly eager?: boolean;
}

export interface GrammarDefinition {
  readonly rules: readonly GrammarRule[];
  readonly root: number;
}

export const MAX_CODE_POINT = 0x10ffff;

export const lit = (text: string): Expr => ({ type: 'literal', text });
export const seq = (...items: Expr[]): Expr => (items.length === 1 ? items[0]! : { type: 'seq', items });
export const alt = (...items: Expr[]): Expr => (items.length === 1 ? items[0]! : { type: 'alt', items });
export const repeat = (item: Expr, min: number, max: number): Expr => ({ type: 'repeat', item, min, max });
export const opt = (item: Expr): Expr => repeat(item, 0, 1);
export const star = (item: Expr): Expr => repeat(item, 0, Infinity);
export const plus = (item: Expr): Expr => repeat(item, 1, Infinity);
export const chars = (ranges: readonly number[]): Expr => ({ type: 'chars', ranges });
export const ref = (rule: number): Expr => ({ type: 'ref', rule });
export const EMPTY: Expr = { type: 'seq', items: [] };
export const NOTHING: Expr = { type: 'alt', items: [] };

/** Sorted, merged code point ranges. */
export function normalizeRanges(ranges: readonly number[]): number[] {
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < ranges.length; i += 2) if (ranges[i]! <= ranges[i + 1]!) pairs.push([ranges[i]!, ranges[i + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  for (const [lo, hi] of pairs) {
    const n = out.length;
    if (n > 0 && lo <= out[n - 1]! + 1) out[n - 1] = Math.max(out[n - 1]!, hi);
    else out.push(lo, hi);
  }
  return out;
}

/** The code points 0..MAX_CODE_POINT not in `ranges`. */
export function complementRanges(ranges: readonly number[]): number[] {
  const norm = normalizeRanges(ranges);
  const out: number[] = [];
  let next = 0;
  for (let i = 0; i < norm.length; i += 2) {
    if (norm[i]! > next) out.push(next, norm[i]! - 1);
    next = norm[i + 1]! + 1;
  }
  if (next <= MAX_CODE_POINT) out.push(next, MAX_CODE_POINT);
  return out;
}

/** Appends `def`'s rules to `rules` (references renumbered); returns the index of its root. */
export function embedGrammar(rules: GrammarRule[], def: GrammarDefinition): number {
  const offset = rules.length;
  const shift = (e: Expr): Expr => {
    switch (e.type) {
      case 'ref': return { type: 'ref', rule: e.rule + offset };
      case 'seq': case 'alt': return { type: e.type, items: e.items.map(shift) };
      case 'repeat': return { ...e, item: shift(e.item) };
      case 'graph': {
        const edges = e.edges.slice();
        for (let i = 0; i < edges.length; i += 4) if (edges[i + 1] === CALL) edges[i + 2]! += offset;
        return { ...e, edges };
      }
      default: return e;
    }
  };
  for (const r of def.rules) rules.push({ ...r, body: shift(r.body) });
  return def.root + offset;
}
