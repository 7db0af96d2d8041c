// llama.cpp's GBNF grammar text -> grammar rules, parsed as llama.cpp's grammar-parser does:
// `name ::= alternatives`, one rule per line (a rule goes on past a newline inside parentheses or
// after `|`), "literals" and [character classes] with \n \r \t \\ \" \[ \] \xHH \uHHHH
// \UHHHHHHHH escapes, `.` for any character, groups, and the postfix operators * + ? {m} {m,}
// {m,n}; `#` starts a comment. The root rule is `root`. Token references (<[id]>) are not
// supported.
import { type Expr, type GrammarDefinition, alt, chars, complementRanges, EMPTY, lit, MAX_CODE_POINT, ref, repeat, seq } from './expr.js';
import { GrammarError } from './errors.js';
import { MAX_NESTING } from './limits.js';

export function gbnfGrammar(text: string, rootName = 'root'): GrammarDefinition {
  return new GbnfParser(text).parse(rootName);
}

const isWordChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9-]/.test(c);

class GbnfParser {
  private pos = 0;
  private depth = 0;
  private readonly ids = new Map<string, number>();
  private readonly bodies: Array<Expr | null> = [];
  private readonly names: string[] = [];
  private readonly firstUse = new Map<string, number>();

  constructor(private readonly src: string) {}

  parse(rootName: string): GrammarDefinition {
    this.space(true);
    while (this.pos < this.src.length) this.rule();
    for (const [name, id] of this.ids) {
      if (this.bodies[id] === null) this.fail(`rule '${name}' is used but never defined`, this.firstUse.get(name) ?? 0);
    }
    const root = this.ids.get(rootName);
    if (root === undefined || this.bodies[root] === null) throw new GrammarError(`the grammar has no '${rootName}' rule`);
    return { rules: this.bodies.map((body, i) => ({ name: this.names[i]!, body: body! })), root };
  }

  private fail(why: string, at = this.pos): never {
    const line = this.src.slice(0, at).split('\n').length;
    throw new GrammarError(`GBNF: ${why} (line ${line})`);
  }

  private id(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.bodies.length;
      this.ids.set(name, id);
      this.bodies.push(null);
      this.names.push(name);
      this.firstUse.set(name, this.pos);
    }
    return id;
  }

  /** Skips blanks and comments, and newlines where `newlines` allows them. */
  private space(newlines: boolean): void {
    while (this.pos < this.src.length) {
      const c = this.src[this.pos]!;
      if (c === ' ' || c === '\t' || ((c === '\n' || c === '\r') && newlines)) this.pos++;
      else if (c === '#') while (this.pos < this.src.length && this.src[this.pos] !== '\n') this.pos++;
      else break;
    }
  }

  private name(): string {
    const start = this.pos;
    while (isWordChar(this.src[this.pos])) this.pos++;
    if (this.pos === start) this.fail(`expected a rule name at '${this.src.slice(start, start + 10)}'`);
    return this.src.slice(start, this.pos);
  }

  private rule(): void {
    const name = this.name();
    this.space(false);
    if (!this.src.startsWith('::=', this.pos)) this.fail(`expected ::= after '${name}'`);
    this.pos += 3;
    this.space(true);
    const id = this.id(name);
    if (this.bodies[id] !== null) this.fail(`rule '${name}' is defined twice`);
    this.bodies[id] = this.alternates(false);
    if (this.src[this.pos] === '\r') this.pos++;
    if (this.src[this.pos] === '\n') this.pos++;
    else if (this.pos < this.src.length) this.fail(`expected the end of the line after rule '${name}'`);
    this.space(true);
  }

  private alternates(nested: boolean): Expr {
    const items = [this.sequence(nested)];
    while (this.src[this.pos] === '|') {
      this.pos++;
      this.space(true);
      items.push(this.sequence(nested));
    }
    return alt(...items);
  }

  private sequence(nested: boolean): Expr {
    const items: Expr[] = [];
    for (;;) {
      const c = this.src[this.pos];
      let item: Expr;
      if (c === '"') {
        this.pos++;
        let text = '';
        while (this.src[this.pos] !== '"') {
          if (this.pos >= this.src.length) this.fail('unterminated string');
          text += String.fromCodePoint(this.char());
        }
        this.pos++;
        item = lit(text);
      } else if (c === '[') {
        item = this.charClass();
      } else if (isWordChar(c)) {
        item = ref(this.id(this.name()));
      } else if (c === '(') {
        if (++this.depth > MAX_NESTING) this.fail('groups nested too deeply');
        this.pos++;
        this.space(true);
        item = this.alternates(true);
        if (this.src[this.pos] !== ')') this.fail('expected )');
        this.pos++;
        this.depth--;
      } else if (c === '.') {
        this.pos++;
        item = chars([0, MAX_CODE_POINT]);
      } else if (c === '<') {
        this.fail('token references (<...>) are not supported');
      } else if (c === '*' || c === '+' || c === '?' || c === '{') {
        if (items.length === 0) this.fail(`expected an item before '${c}'`);
        items.push(this.postfix(items.pop()!));
        this.space(nested);
        continue;
      } else {
        break;
      }
      items.push(item);
      this.space(nested);
    }
    return items.length === 0 ? EMPTY : seq(...items);
  }

  private postfix(item: Expr): Expr {
    const c = this.src[this.pos++];
    if (c === '*') return repeat(item, 0, Infinity);
    if (c === '+') return repeat(item, 1, Infinity);
    if (c === '?') return repeat(item, 0, 1);
    const m = /^\s*(\d+)\s*(,\s*(\d*)\s*)?\}/.exec(this.src.slice(this.pos, this.pos + 40));
    if (m === null) this.fail('expected {m}, {m,} or {m,n}');
    this.pos += m[0].length;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
    if (max < min) this.fail('repetition bounds out of order');
    return repeat(item, min, max);
  }

  private charClass(): Expr {
    this.pos++;
    const negate = this.src[this.pos] === '^';
    if (negate) this.pos++;
    const ranges: number[] = [];
    while (this.src[this.pos] !== ']') {
      if (this.pos >= this.src.length) this.fail('unterminated character class');
      const lo = this.char();
      if (this.src[this.pos] === '-' && this.src[this.pos + 1] !== ']') {
        this.pos++;
        const hi = this.char();
        if (hi < lo) this.fail('character range out of order');
        ranges.push(lo, hi);
      } else {
        ranges.push(lo, lo);
      }
    }
    this.pos++;
    return chars(negate ? complementRanges(ranges) : ranges);
  }

  /** One character of a literal or class, escapes decoded. */
  private char(): number {
    const c = this.src.codePointAt(this.pos)!;
    this.pos += c > 0xffff ? 2 : 1;
    if (c !== 0x5c) return c;
    const e = this.src[this.pos++];
    switch (e) {
      case 'n': return 0x0a;
      case 'r': return 0x0d;
      case 't': return 0x09;
      case 'x': return this.hex(2);
      case 'u': return this.hex(4);
      case 'U': return this.hex(8);
      case '\\': case '"': case '[': case ']': case '-': case '^': return e.charCodeAt(0);
      default: return this.fail(`unknown escape \\${e ?? ''}`);
    }
  }

  private hex(n: number): number {
    const h = this.src.slice(this.pos, this.pos + n);
    if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(h)) this.fail(`expected ${n} hex digits`);
    this.pos += n;
    const v = parseInt(h, 16);
    if (v > MAX_CODE_POINT) this.fail('code point out of range');
    return v;
  }
}
