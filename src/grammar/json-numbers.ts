// JSON numbers under JSON Schema's numeric keywords, as exact regular languages: bounds compare the
// digits of the written number with the bound's decimal digits (integer part by length and then
// digit by digit, fraction digit by digit), multipleOf on integers is a remainder automaton, and a
// multipleOf of 10^-k limits the fraction's digits. Under bounds or multipleOf numbers are written
// without an exponent.
import { intersect } from './automaton-ops.js';
import { type Expr, alt, chars, EMPTY, lit, NOTHING, opt, plus, repeat, seq, star } from './expr.js';

const DIGIT = chars([0x30, 0x39]);
const NONZERO = chars([0x31, 0x39]);
const INT = alt(lit('0'), seq(NONZERO, star(DIGIT)));
const FRACTION = seq(lit('.'), plus(DIGIT));
const EXPONENT = seq(chars([0x45, 0x45, 0x65, 0x65]), opt(chars([0x2b, 0x2b, 0x2d, 0x2d])), plus(DIGIT));

/** Largest integer multipleOf kept as a remainder automaton (one state per remainder). */
export const MAX_MULTIPLE_OF = 100_000;

export const ANY_INTEGER = seq(opt(lit('-')), INT);
export const ANY_NUMBER = seq(opt(lit('-')), INT, opt(FRACTION), opt(EXPONENT));

/** A decimal as digit strings: integer part without leading zeros ("0" for none), fraction without trailing zeros. */
interface Decimal {
  neg: boolean;
  int: string;
  frac: string;
}

/** The exact decimal digits of a double, as JSON writes it (shortest round trip), exponent expanded. */
export function decimalOf(n: number | string): Decimal {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(n));
  if (m === null) throw new RangeError(`not a finite number: ${n}`);
  let digits = m[2]! + (m[3] ?? '');
  let point = m[2]!.length + Number(m[4] ?? 0);
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits += '0'.repeat(point - digits.length);
  const int = digits.slice(0, point).replace(/^0+/, '') || '0';
  const frac = digits.slice(point).replace(/0+$/, '');
  return { neg: m[1] === '-' && (int !== '0' || frac !== ''), int, frac };
}

const digitRange = (lo: number, hi: number): Expr => (lo > hi ? NOTHING : chars([0x30 + lo, 0x30 + hi]));
const anyDigits = (n: number): Expr => repeat(DIGIT, n, n);

/** Canonical non-negative integers greater than I. */
function intGreater(I: string): Expr {
  const parts: Expr[] = [seq(NONZERO, anyDigits(I.length), star(DIGIT))];
  for (let i = 0; i < I.length; i++) parts.push(seq(lit(I.slice(0, i)), digitRange(Number(I[i]) + 1, 9), anyDigits(I.length - i - 1)));
  return alt(...parts);
}

/** Canonical non-negative integers less than I. */
function intLess(I: string): Expr {
  const parts: Expr[] = [];
  if (I.length > 1) parts.push(lit('0'), seq(NONZERO, repeat(DIGIT, 0, I.length - 2)));
  for (let i = 0; i < I.length; i++) {
    const lowest = i === 0 && I.length > 1 ? 1 : 0;
    parts.push(seq(lit(I.slice(0, i)), digitRange(lowest, Number(I[i]) - 1), anyDigits(I.length - i - 1)));
  }
  return alt(...parts);
}

type Op = 'ge' | 'gt' | 'le' | 'lt';

/** What may follow the integer part when it equals the bound's: a fraction compared with F. */
function fractionVs(F: string, op: Op, fractions: boolean): Expr {
  // An integer's fraction is zero: it equals F when F is empty, and is below it otherwise.
  if (!fractions) return (F === '' ? op === 'ge' || op === 'le' : op === 'le' || op === 'lt') ? EMPTY : NOTHING;
  const k = F.length;
  const anyFrac = star(DIGIT);
  const nonzeroTail = seq(star(DIGIT), NONZERO, star(DIGIT));
  const parts: Expr[] = [];
  if (op === 'ge' || op === 'gt') {
    if (k === 0) return op === 'ge' ? opt(FRACTION) : seq(lit('.'), nonzeroTail);
    for (let i = 0; i < k; i++) parts.push(seq(lit('.' + F.slice(0, i)), digitRange(Number(F[i]) + 1, 9), anyFrac));
    parts.push(seq(lit('.' + F), op === 'ge' ? anyFrac : nonzeroTail));
    return alt(...parts);
  }
  if (k === 0) return op === 'le' ? opt(seq(lit('.'), plus(lit('0')))) : NOTHING;
  parts.push(EMPTY);
  for (let i = 0; i < k; i++) {
    parts.push(seq(lit('.' + F.slice(0, i)), digitRange(0, Number(F[i]) - 1), anyFrac));
    if (i > 0) parts.push(lit('.' + F.slice(0, i)));
  }
  if (op === 'le') parts.push(seq(lit('.' + F), star(lit('0'))));
  return alt(...parts);
}

/** Non-negative numbers (no sign, no exponent) that compare with |B| as `op` says. */
function magnitude(B: Decimal, op: Op, fractions: boolean): Expr {
  const rest = fractions ? opt(FRACTION) : EMPTY;
  const other = op === 'ge' || op === 'gt' ? intGreater(B.int) : intLess(B.int);
  return alt(seq(other, rest), seq(lit(B.int), fractionVs(B.frac, op, fractions)));
}

const flip: Record<Op, Op> = { ge: 'le', gt: 'lt', le: 'ge', lt: 'gt' };

/** Numbers x (signed, no exponent) with `x op bound`. */
export function compareWith(bound: number | string, op: Op, fractions: boolean): Expr {
  const B = decimalOf(bound);
  const unsigned = seq(INT, fractions ? opt(FRACTION) : EMPTY);
  const negative = (e: Expr) => seq(lit('-'), e);
  const zero = B.int === '0' && B.frac === '';
  if (op === 'ge' || op === 'gt') {
    if (!B.neg) return magnitude(B, op, fractions);
    return alt(unsigned, negative(magnitude(B, flip[op], fractions)));
  }
  if (B.neg) return negative(magnitude(B, flip[op], fractions));
  if (op === 'lt' && zero) return negative(magnitude(B, 'gt', fractions));
  return alt(negative(unsigned), magnitude(B, op, fractions));
}

/** Integers (optionally signed) that are multiples of m; with `fractions`, `.0…` may follow. */
export function multipleOfInteger(m: number, fractions: boolean): Expr {
  // States: 0 start, 1 after '-', 2 the number 0, 3.. remainder r at 3 + r; then '.', zeros.
  const edges: number[] = [];
  const R = (r: number) => 3 + r;
  const dot = 3 + m;
  const zeros = dot + 1;
  for (const from of [0, 1]) {
    edges.push(from, 0x30, 0x30, 2);
    for (let d = 1; d <= 9; d++) edges.push(from, 0x30 + d, 0x30 + d, R(d % m));
  }
  edges.push(0, 0x2d, 0x2d, 1);
  for (let r = 0; r < m; r++) for (let d = 0; d <= 9; d++) edges.push(R(r), 0x30 + d, 0x30 + d, R((r * 10 + d) % m));
  const accepting = [2, R(0)];
  if (fractions) {
    edges.push(2, 0x2e, 0x2e, dot, R(0), 0x2e, 0x2e, dot, dot, 0x30, 0x30, zeros, zeros, 0x30, 0x30, zeros);
    accepting.push(zeros);
  }
  return { type: 'graph', states: zeros + 1, edges, accepting };
}

export interface NumberConstraints {
  integer: boolean;
  /** Bounds: numbers, or exact decimal strings (for bounds a double cannot hold). */
  minimum?: number | string;
  exclusiveMinimum?: number | string;
  maximum?: number | string;
  exclusiveMaximum?: number | string;
  multipleOf?: number;
}

/**
 * The JSON numbers meeting the constraints; null when a multipleOf is neither an integer up to
 * MAX_MULTIPLE_OF nor a power of ten below one (the caller reports it).
 */
export function numberExpr(c: NumberConstraints): Expr | null {
  const fractions = !c.integer;
  const parts: Expr[] = [];
  if (c.minimum !== undefined) parts.push(compareWith(c.minimum, 'ge', fractions));
  if (c.exclusiveMinimum !== undefined) parts.push(compareWith(c.exclusiveMinimum, 'gt', fractions));
  if (c.maximum !== undefined) parts.push(compareWith(c.maximum, 'le', fractions));
  if (c.exclusiveMaximum !== undefined) parts.push(compareWith(c.exclusiveMaximum, 'lt', fractions));
  if (c.multipleOf !== undefined) {
    const m = c.multipleOf;
    if (Number.isInteger(m) && m >= 1 && m <= MAX_MULTIPLE_OF) {
      if (m > 1 || fractions) parts.push(multipleOfInteger(m, fractions));
    } else if (!c.integer && m > 0 && m < 1 && /^0\.0*1$/.test(String(m))) {
      const k = String(m).length - 2;
      parts.push(seq(opt(lit('-')), INT, opt(seq(lit('.'), repeat(DIGIT, 1, k), star(lit('0'))))));
    } else if (c.integer && m > 0 && m < 1 && Number.isInteger(1 / m)) {
      // Every integer is a multiple of 1/n.
    } else {
      return null;
    }
  }
  if (parts.length === 0) return c.integer ? ANY_INTEGER : ANY_NUMBER;
  return parts.reduce((a, b) => intersect(a, b));
}
