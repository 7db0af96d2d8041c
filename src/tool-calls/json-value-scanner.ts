// An incremental, iterative JSON validator for exactly one value. It knows string and escape state,
// so callers can find where a value ends in any chunking; nesting lives in an explicit stack, so
// `[[[[…` a million deep costs memory, never recursion.

const enum St {
  Value, // expecting a value (leading whitespace allowed)
  KeyOrEnd, // after `{`
  Key, // after `,` in an object
  Colon,
  ObjNext, // after a member value: `,` or `}`
  ValueOrEnd, // after `[`
  ArrNext, // after an element: `,` or `]`
  Str,
  Esc,
  Hex,
  Minus,
  Zero,
  Int,
  Dot,
  Frac,
  Exp,
  ExpSign,
  ExpDigits,
  Literal,
  Done,
  Error,
}

const OBJ = 0;
const ARR = 1;

export function isJsonWhitespace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

export class JsonValueScanner {
  private st = St.Value;
  // Open containers, innermost last: a byte each, grown by doubling.
  private stack = new Uint8Array(64);
  private depth = 0;
  private strIsKey = false;
  private hexLeft = 0;
  private literal = '';
  private literalAt = 0;
  /** Code unit of the value's first character (`{`, `[`, `"`, digit, `-`, `t`, `f`, `n`); 0 before it. */
  first = 0;

  reset(): void {
    this.st = St.Value;
    this.depth = 0;
    this.first = 0;
  }

  get done(): boolean {
    return this.st === St.Done;
  }

  get failed(): boolean {
    return this.st === St.Error;
  }

  /** True while inside a string (key or value) at any depth. */
  get inString(): boolean {
    return this.st === St.Str || this.st === St.Esc || this.st === St.Hex;
  }

  /**
   * Consumes text[i..n). Returns the index just past the last character consumed: n when the
   * value continues, the index after its last character when it completed (a number completes on
   * the first character that cannot extend it, which is left unconsumed), or the index of the
   * offending character when it is not JSON.
   */
  feed(text: string, i: number, n: number): number {
    while (i < n) {
      const c = text.charCodeAt(i);
      switch (this.st) {
        case St.Str: {
          // The hot loop: long string values are most of what arguments are made of.
          let j = i;
          let d = c;
          for (;;) {
            if (d === 34) {
              this.st = this.strIsKey ? St.Colon : this.afterValue();
              i = j + 1;
              break;
            }
            if (d === 92) {
              this.st = St.Esc;
              i = j + 1;
              break;
            }
            if (d < 32) {
              this.st = St.Error;
              return j;
            }
            if (++j >= n) return n;
            d = text.charCodeAt(j);
          }
          if (this.done) return i;
          continue;
        }
        case St.Esc:
          if (c === 117) {
            this.st = St.Hex;
            this.hexLeft = 4;
          } else if (c === 34 || c === 92 || c === 47 || c === 98 || c === 102 || c === 110 || c === 114 || c === 116) {
            this.st = St.Str;
          } else {
            this.st = St.Error;
            return i;
          }
          i++;
          continue;
        case St.Hex:
          if (!isHex(c)) {
            this.st = St.Error;
            return i;
          }
          if (--this.hexLeft === 0) this.st = St.Str;
          i++;
          continue;
        case St.Value:
        case St.ValueOrEnd:
          if (c === 91 && this.first !== 0) {
            // Nested arrays, the one structure that can come a million deep: no detour.
            this.open(ARR);
            this.st = St.ValueOrEnd;
            i++;
            continue;
          }
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c === 93 && this.st === St.ValueOrEnd) {
            this.depth--;
            this.st = this.afterValue();
            i++;
            if (this.done) return i;
            continue;
          }
          if (this.first === 0) this.first = c;
          if (!this.beginValue(c)) return i;
          i++;
          if (this.done) return i;
          continue;
        case St.KeyOrEnd:
        case St.Key:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c === 34) {
            this.st = St.Str;
            this.strIsKey = true;
            i++;
            continue;
          }
          if (c === 125 && this.st === St.KeyOrEnd) {
            this.depth--;
            this.st = this.afterValue();
            i++;
            if (this.done) return i;
            continue;
          }
          this.st = St.Error;
          return i;
        case St.Colon:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c !== 58) {
            this.st = St.Error;
            return i;
          }
          this.st = St.Value;
          i++;
          continue;
        case St.ObjNext:
        case St.ArrNext:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c === 44) {
            this.st = this.st === St.ObjNext ? St.Key : St.Value;
            i++;
            continue;
          }
          if ((c === 125 && this.st === St.ObjNext) || (c === 93 && this.st === St.ArrNext)) {
            this.depth--;
            this.st = this.afterValue();
            i++;
            if (this.done) return i;
            continue;
          }
          this.st = St.Error;
          return i;
        case St.Minus:
          if (c === 48) this.st = St.Zero;
          else if (isDigit(c)) this.st = St.Int;
          else {
            this.st = St.Error;
            return i;
          }
          i++;
          continue;
        case St.Zero:
        case St.Int:
          if (isDigit(c) && this.st === St.Int) {
            i++;
            continue;
          }
          if (c === 46) {
            this.st = St.Dot;
            i++;
            continue;
          }
          if (c === 101 || c === 69) {
            this.st = St.Exp;
            i++;
            continue;
          }
          if (!this.endNumber(c)) return i;
          if (this.done) return i;
          continue;
        case St.Dot:
          if (!isDigit(c)) {
            this.st = St.Error;
            return i;
          }
          this.st = St.Frac;
          i++;
          continue;
        case St.Frac:
          if (isDigit(c)) {
            i++;
            continue;
          }
          if (c === 101 || c === 69) {
            this.st = St.Exp;
            i++;
            continue;
          }
          if (!this.endNumber(c)) return i;
          if (this.done) return i;
          continue;
        case St.Exp:
          if (c === 43 || c === 45) this.st = St.ExpSign;
          else if (isDigit(c)) this.st = St.ExpDigits;
          else {
            this.st = St.Error;
            return i;
          }
          i++;
          continue;
        case St.ExpSign:
          if (!isDigit(c)) {
            this.st = St.Error;
            return i;
          }
          this.st = St.ExpDigits;
          i++;
          continue;
        case St.ExpDigits:
          if (isDigit(c)) {
            i++;
            continue;
          }
          if (!this.endNumber(c)) return i;
          if (this.done) return i;
          continue;
        case St.Literal:
          if (c !== this.literal.charCodeAt(this.literalAt)) {
            this.st = St.Error;
            return i;
          }
          i++;
          if (++this.literalAt === this.literal.length) {
            this.st = this.afterValue();
            if (this.done) return i;
          }
          continue;
        case St.Done:
        case St.Error:
          return i;
      }
    }
    return n;
  }

  /** End of input: a top-level number completes here; anything else unfinished is an error. */
  end(): void {
    if (this.st === St.Done) return;
    const st = this.st;
    if (this.depth === 0 && (st === St.Zero || st === St.Int || st === St.Frac || st === St.ExpDigits)) {
      this.st = St.Done;
    } else {
      this.st = St.Error;
    }
  }

  private beginValue(c: number): boolean {
    switch (c) {
      case 123:
        this.open(OBJ);
        this.st = St.KeyOrEnd;
        return true;
      case 91:
        this.open(ARR);
        this.st = St.ValueOrEnd;
        return true;
      case 34:
        this.st = St.Str;
        this.strIsKey = false;
        return true;
      case 45:
        this.st = St.Minus;
        return true;
      case 48:
        this.st = St.Zero;
        return true;
      case 116:
        return this.beginLiteral('true');
      case 102:
        return this.beginLiteral('false');
      case 110:
        return this.beginLiteral('null');
      default:
        if (isDigit(c)) {
          this.st = St.Int;
          return true;
        }
        this.st = St.Error;
        return false;
    }
  }

  private beginLiteral(word: string): boolean {
    this.st = St.Literal;
    this.literal = word;
    this.literalAt = 1;
    return true;
  }

  /** A number ended on `c` (not consumed): `c` must be able to follow a value. */
  private endNumber(c: number): boolean {
    this.st = this.afterValue();
    if (this.st === St.Done) return true;
    if (isJsonWhitespace(c) || c === 44 || c === 125 || c === 93) return true;
    this.st = St.Error;
    return false;
  }

  private open(kind: number): void {
    if (this.depth === this.stack.length) {
      const grown = new Uint8Array(this.stack.length * 2);
      grown.set(this.stack);
      this.stack = grown;
    }
    this.stack[this.depth++] = kind;
  }

  private afterValue(): St {
    const d = this.depth;
    if (d === 0) return St.Done;
    return this.stack[d - 1] === OBJ ? St.ObjNext : St.ArrNext;
  }
}

/** True when `text` is exactly one JSON value, optionally surrounded by whitespace. */
export function isJsonValue(text: string, scanner = new JsonValueScanner()): boolean {
  scanner.reset();
  let i = scanner.feed(text, 0, text.length);
  if (!scanner.done) {
    if (scanner.failed) return false;
    scanner.end();
    if (!scanner.done) return false;
  }
  for (; i < text.length; i++) if (!isJsonWhitespace(text.charCodeAt(i))) return false;
  return true;
}
