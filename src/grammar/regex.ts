// Regular expressions (ECMAScript syntax, as JSON Schema's `pattern` and the `{ regex }` grammar
// use) as grammar expressions. Characters, classes, escapes (\d \w \s, \xHH, \uHHHH, \u{...}),
// groups, alternation and every quantifier are supported; lookarounds, backreferences and word
// boundaries are not (no finite automaton has them) and raise RegexSyntaxError. `json` encoding
// matches a string's characters as they appear inside a JSON string literal (escaped the way
// JSON.stringify escapes them), for patterns over a JSON string's value.
import { type Expr, alt, chars, complementRanges, lit, MAX_CODE_POINT, normalizeRanges, repeat, seq, star } from './expr.js';
import { MAX_NESTING } from './limits.js';

export class RegexSyntaxError extends Error {}

export type CharEncoding = 'raw' | 'json';

export interface RegexOptions {
  /**
   * true: the whole text must match (`^` and `$` at the ends change nothing); false: a match
   * anywhere in the text, as JSON Schema's `pattern` means, unless `^`/`$` anchor it.
   */
  anchored: boolean;
  encoding: CharEncoding;
}

type Node =
  | { t: 'set'; ranges: number[] }
  | { t: 'seq'; items: Node[] }
  | { t: 'alt'; items: Node[] }
  | { t: 'rep'; item: Node; min: number; max: number }
  | { t: 'bol' }
  | { t: 'eol' };

const DIGIT = [0x30, 0x39];
const WORD = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a];
// ECMAScript's WhiteSpace and LineTerminator.
const SPACE = [0x09, 0x0d, 0x20, 0x20, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000, 0xfeff, 0xfeff];
const LINE_TERMINATORS = [0x0a, 0x0a, 0x0d, 0x0d, 0x2028, 0x2029];
const ANY = [0, MAX_CODE_POINT];

export function regexExpr(source: string, opts: RegexOptions): Expr {
  const ast = new Parser(source).parse();
  const branches = ast.t === 'alt' ? ast.items : [ast];
  const enc = opts.encoding;
  return alt(...branches.map((b) => {
    const items = b.t === 'seq' ? b.items.slice() : [b];
    let startAnchored = opts.anchored;
    let endAnchored = opts.anchored;
    while (items[0]?.t === 'bol') {
      items.shift();
      startAnchored = true;
    }
    while (items[items.length - 1]?.t === 'eol') {
      items.pop();
      endAnchored = true;
    }
    const body = items.map((n) => toExpr(n, enc));
    const anyText = star(charSet(ANY, enc));
    return seq(...(startAnchored ? [] : [anyText]), ...body, ...(endAnchored ? [] : [anyText]));
  }));
}

function toExpr(n: Node, enc: CharEncoding): Expr {
  switch (n.t) {
    case 'set':
      return charSet(n.ranges, enc);
    case 'seq':
      return seq(...n.items.map((i) => toExpr(i, enc)));
    case 'alt':
      return alt(...n.items.map((i) => toExpr(i, enc)));
    case 'rep':
      return repeat(toExpr(n.item, enc), n.min, n.max);
    case 'bol':
    case 'eol':
      throw new RegexSyntaxError('^ and $ are supported only at the start and end of the pattern (or of a top-level alternative)');
  }
}

/** One character of `ranges`, spelled as `enc` requires. */
export function charSet(ranges: readonly number[], enc: CharEncoding): Expr {
  if (enc === 'raw') return chars(ranges);
  const norm = normalizeRanges(ranges);
  const plain: number[] = [];
  const escaped: number[] = [];
  for (let i = 0; i < norm.length; i += 2) {
    const lo = norm[i]!;
    const hi = norm[i + 1]!;
    // Cut out the characters JSON writes escaped.
    let from = lo;
    for (let c = lo; c <= Math.min(hi, 0x5c); c++) {
      if (c < 0x20 || c === 0x22 || c === 0x5c) {
        if (c > from) plain.push(from, c - 1);
        escaped.push(c);
        from = c + 1;
      }
    }
    if (from <= hi) plain.push(from, hi);
  }
  const parts: Expr[] = plain.length > 0 ? [chars(plain)] : [];
  // Short escapes one by one; the \u00XY ones grouped by X, so a class of controls stays small.
  const hexDigits: number[][] = [[], []];
  for (const c of escaped) {
    const e = jsonEscape(c);
    if (e.length === 2) parts.push(lit(e));
    else hexDigits[c >> 4]!.push(e.charCodeAt(5), e.charCodeAt(5));
  }
  hexDigits.forEach((digits, x) => {
    if (digits.length > 0) parts.push(seq(lit(`\\u00${x}`), chars(digits)));
  });
  return alt(...parts);
}

/** How JSON.stringify writes the character: its short escape, or \u00XX for other controls. */
export function jsonEscape(c: number): string {
  return JSON.stringify(String.fromCharCode(c)).slice(1, -1);
}

class Parser {
  private pos = 0;
  private depth = 0;
  private readonly cps: number[];

  constructor(source: string) {
    this.cps = Array.from(source, (c) => c.codePointAt(0)!);
  }

  parse(): Node {
    const n = this.alternation();
    if (this.pos < this.cps.length) this.fail(this.cps[this.pos] === 0x29 ? 'unbalanced )' : 'unexpected character');
    return n;
  }

  private fail(why: string): never {
    throw new RegexSyntaxError(`${why} at position ${this.pos}`);
  }

  private peek(): number | undefined {
    return this.cps[this.pos];
  }

  private eat(c: number): boolean {
    if (this.cps[this.pos] === c) {
      this.pos++;
      return true;
    }
    return false;
  }

  private alternation(): Node {
    const items = [this.sequence()];
    while (this.eat(0x7c)) items.push(this.sequence());
    return items.length === 1 ? items[0]! : { t: 'alt', items };
  }

  private sequence(): Node {
    const items: Node[] = [];
    for (let c = this.peek(); c !== undefined && c !== 0x7c && c !== 0x29; c = this.peek()) items.push(this.quantified());
    return items.length === 1 ? items[0]! : { t: 'seq', items };
  }

  private quantified(): Node {
    let n = this.atom();
    for (;;) {
      const c = this.peek();
      let min: number;
      let max: number;
      if (c === 0x2a) [min, max] = [0, Infinity];
      else if (c === 0x2b) [min, max] = [1, Infinity];
      else if (c === 0x3f) [min, max] = [0, 1];
      else if (c === 0x7b) {
        const counted = this.counted();
        if (counted === null) return n;
        [min, max] = counted;
      } else return n;
      if (c !== 0x7b) this.pos++;
      if (n.t === 'bol' || n.t === 'eol') this.fail('nothing to repeat');
      this.eat(0x3f); // a lazy quantifier matches the same language
      n = { t: 'rep', item: n, min, max };
    }
  }

  /** `{n}`, `{n,}`, `{n,m}`; null when the brace is a literal (ECMAScript's Annex B). */
  private counted(): [number, number] | null {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(String.fromCodePoint(...this.cps.slice(this.pos, this.pos + 24)));
    if (m === null) return null;
    this.pos += m[0].length;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
    if (max < min) this.fail('numbers out of order in {} quantifier');
    return [min, max];
  }

  private atom(): Node {
    const c = this.cps[this.pos++];
    switch (c) {
      case 0x5e:
        return { t: 'bol' };
      case 0x24:
        return { t: 'eol' };
      case 0x2e:
        return { t: 'set', ranges: complementRanges(LINE_TERMINATORS) };
      case 0x5b:
        return { t: 'set', ranges: this.charClass() };
      case 0x28: {
        if (++this.depth > MAX_NESTING) this.fail('groups nested too deeply');
        if (this.eat(0x3f)) {
          if (this.eat(0x3a)) { /* non-capturing */ } else if (this.peek() === 0x3c && this.cps[this.pos + 1] !== 0x3d && this.cps[this.pos + 1] !== 0x21) {
            while (this.peek() !== undefined && this.peek() !== 0x3e) this.pos++;
            if (!this.eat(0x3e)) this.fail('unterminated group name');
          } else this.fail('lookarounds are not supported');
        }
        const inner = this.alternation();
        if (!this.eat(0x29)) this.fail('missing )');
        this.depth--;
        return inner.t === 'seq' && inner.items.length === 0 ? { t: 'seq', items: [] } : inner;
      }
      case 0x5c:
        return this.escape(false);
      case 0x29:
        this.pos--;
        return this.fail('unbalanced )');
      case 0x2a:
      case 0x2b:
      case 0x3f:
        this.pos--;
        return this.fail('nothing to repeat');
      case undefined:
        return this.fail('unexpected end');
      default:
        return { t: 'set', ranges: [c, c] };
    }
  }

  /** After a backslash. In a class, \b is a backspace and \B, \1 are errors. */
  private escape(inClass: boolean): { t: 'set'; ranges: number[] } {
    const c = this.cps[this.pos++];
    const set = (ranges: number[]) => ({ t: 'set' as const, ranges });
    switch (c) {
      case undefined: return this.fail('\\ at end of pattern');
      case 0x64: return set(DIGIT);
      case 0x44: return set(complementRanges(DIGIT));
      case 0x77: return set(WORD);
      case 0x57: return set(complementRanges(WORD));
      case 0x73: return set(SPACE);
      case 0x53: return set(complementRanges(SPACE));
      case 0x6e: return set([0x0a, 0x0a]);
      case 0x72: return set([0x0d, 0x0d]);
      case 0x74: return set([0x09, 0x09]);
      case 0x66: return set([0x0c, 0x0c]);
      case 0x76: return set([0x0b, 0x0b]);
      case 0x30:
        if (this.peek() !== undefined && this.peek()! >= 0x30 && this.peek()! <= 0x39) this.fail('octal escapes are not supported');
        return set([0, 0]);
      case 0x62:
        if (inClass) return set([0x08, 0x08]);
        return this.fail('word boundaries (\\b) are not supported');
      case 0x42: return this.fail('word boundaries (\\B) are not supported');
      case 0x63: {
        const l = this.cps[this.pos++];
        if (l === undefined || !((l >= 0x41 && l <= 0x5a) || (l >= 0x61 && l <= 0x7a))) this.fail('bad \\c escape');
        return set([l % 32, l % 32]);
      }
      case 0x78: {
        const v = this.hex(2);
        return set([v, v]);
      }
      case 0x75: {
        if (this.eat(0x7b)) {
          let v = 0;
          let digits = 0;
          while (this.peek() !== 0x7d) {
            v = v * 16 + this.hexDigit();
            if (++digits > 6 || v > MAX_CODE_POINT) this.fail('bad \\u{} escape');
          }
          this.pos++;
          return set([v, v]);
        }
        let v = this.hex(4);
        // A surrogate pair written as two \u escapes is one character.
        if (v >= 0xd800 && v <= 0xdbff && this.cps[this.pos] === 0x5c && this.cps[this.pos + 1] === 0x75) {
          const save = this.pos;
          this.pos += 2;
          const lo = this.hex(4);
          if (lo >= 0xdc00 && lo <= 0xdfff) v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
          else this.pos = save;
        }
        return set([v, v]);
      }
      case 0x70:
      case 0x50:
        return this.fail('Unicode property escapes (\\p) are not supported');
      case 0x6b:
        return this.fail('backreferences are not supported');
      default:
        if (c >= 0x31 && c <= 0x39) return this.fail('backreferences are not supported');
        return set([c, c]);
    }
  }

  private hexDigit(): number {
    const c = this.cps[this.pos++];
    if (c !== undefined) {
      if (c >= 0x30 && c <= 0x39) return c - 0x30;
      if (c >= 0x41 && c <= 0x46) return c - 0x37;
      if (c >= 0x61 && c <= 0x66) return c - 0x57;
    }
    return this.fail('bad hex digit');
  }

  private hex(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++) v = v * 16 + this.hexDigit();
    return v;
  }

  private charClass(): number[] {
    const negate = this.eat(0x5e);
    const ranges: number[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.fail('unterminated character class');
      if (c === 0x5d) break;
      const lo = this.classAtom();
      if (this.peek() === 0x2d && this.cps[this.pos + 1] !== 0x5d && this.cps[this.pos + 1] !== undefined) {
        this.pos++;
        const hi = this.classAtom();
        if (lo.length !== 2 || hi.length !== 2 || lo[0] !== lo[1] || hi[0] !== hi[1]) this.fail('a class escape cannot bound a range');
        if (hi[0]! < lo[0]!) this.fail('range out of order in character class');
        ranges.push(lo[0]!, hi[0]!);
      } else {
        ranges.push(...lo);
      }
    }
    this.pos++;
    return negate ? complementRanges(ranges) : normalizeRanges(ranges);
  }

  private classAtom(): number[] {
    const c = this.cps[this.pos++]!;
    if (c === 0x5c) return this.escape(true).ranges;
    return [c, c];
  }
}

