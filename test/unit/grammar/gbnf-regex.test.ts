// GBNF as llama.cpp writes it (its json.gbnf and arithmetic.gbnf examples) and regular expressions
// against JavaScript's RegExp: whole-text matches for the { regex } grammar, matches anywhere for
// JSON Schema patterns, on random strings.
import { describe, expect, test } from 'vitest';
import { compileGrammar } from '../../../src/grammar/compile-grammar.js';
import { GrammarError } from '../../../src/grammar/errors.js';
import { chatTokenizer } from '../../fixtures/chat/tiny-chat-model.js';
import { prng } from '../../helpers/prng.js';
import { matchText } from './match-text.js';

const tok = chatTokenizer('qwen3');

// llama.cpp grammars/json.gbnf (MIT).
const JSON_GBNF = String.raw`root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
`;

// llama.cpp grammars/arithmetic.gbnf (MIT).
const ARITHMETIC_GBNF = String.raw`root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
`;

describe('GBNF', () => {
  test("llama.cpp's json.gbnf", () => {
    const m = compileGrammar({ gbnf: JSON_GBNF }, tok);
    for (const ok of ['{}', '{"a": [1, -2.5e3, true, null, "x\\n"]}', '{\n  "k": {"n": {}}\n}']) expect(matchText(m, tok, ok), ok).toBe('accepted');
    for (const bad of ['[]', '{"a" 1}', '{"a": 01}', '{"a": "\u0001"}']) expect(matchText(m, tok, bad), bad).toBe('refused');
    expect(matchText(m, tok, '{"a": [1')).toBe('incomplete');
  });

  test("llama.cpp's arithmetic.gbnf", () => {
    const m = compileGrammar({ gbnf: ARITHMETIC_GBNF }, tok);
    expect(matchText(m, tok, '1 +2 = 3\n(x1 *4) -y = z\n')).toBe('accepted');
    expect(matchText(m, tok, '1 + 2 = 3\n')).toBe('refused'); // a term cannot start with a space
    expect(matchText(m, tok, '1 + = 3\n')).toBe('refused');
  });

  test('syntax errors name the problem and the line', () => {
    const bad: Array<[string, RegExp]> = [
      ['root ::= foo', /rule 'foo' is used but never defined/],
      ['root "a"', /expected ::=/],
      ['root ::= "a"\nroot ::= "b"', /defined twice \(line 2\)/],
      ['root ::= "\\q"', /unknown escape/],
      ['root ::= [b-a]', /out of order/],
      ['root ::= ("a"', /expected \)/],
      ['root ::= <[1]>', /token references/],
      ['other ::= "a"', /no 'root' rule/],
    ];
    for (const [text, why] of bad) expect(() => compileGrammar({ gbnf: text }, tok), text).toThrow(why);
    expect(() => compileGrammar({ gbnf: 'root ::= "a"' }, tok)).not.toThrow();
  });
});

/** Random strings over the characters the patterns use, with some others. */
function randomStrings(seed: number, n: number): string[] {
  const r = prng(seed);
  const alphabet = ['a', 'b', 'c', '1', '9', '-', '.', '@', ' ', '"', '\\', '\n', 'é', '😀', 'Z', '_'];
  const out: string[] = [''];
  for (let i = 0; i < n; i++) {
    let s = '';
    const len = Math.floor(r.next() * 9);
    for (let j = 0; j < len; j++) s += alphabet[Math.floor(r.next() * alphabet.length)];
    out.push(s);
  }
  return out;
}

const PATTERNS = [
  'a|b', 'ab*c?', '[a-c]+1?', '(ab|a)(bc|c)', 'a{2,3}', 'a{2,}b', '[^a-c]*', '\\d+\\.\\d*', '\\w+@\\w+',
  '.', '.*-.*', '[\\s\\S]{0,3}', 'é|😀+', '(?:a|\\.){1,2}', '\\x61\\u0062', '[\\-.]', 'a?b?c?',
];

describe('regular expressions agree with RegExp', () => {
  const strings = randomStrings(7, 300);
  test.each(PATTERNS)('%s as a whole-text grammar', (p) => {
    const m = compileGrammar({ regex: p }, tok);
    const re = new RegExp(`^(?:${p})$`, 'u');
    for (const s of strings) {
      const got = m.clone();
      const ok = got.acceptBytes(new TextEncoder().encode(s)) && got.canEnd();
      if (ok !== re.test(s)) throw new Error(`${p} on ${JSON.stringify(s)}: kiln ${ok}, RegExp ${re.test(s)}`);
    }
  });

  test.each([...PATTERNS, '^a', 'b$', '^a|b$', '^$'])('%s as a JSON Schema pattern (a match anywhere)', (p) => {
    const m = compileGrammar({ jsonSchema: { type: 'string', pattern: p } }, tok);
    const re = new RegExp(p, 'u');
    for (const s of strings) {
      const got = m.clone();
      const text = JSON.stringify(s);
      const ok = got.acceptBytes(new TextEncoder().encode(text)) && got.canEnd();
      if (ok !== re.test(s)) throw new Error(`${p} on ${text}: kiln ${ok}, RegExp ${re.test(s)}`);
    }
  });

  test('what automata cannot do is refused', () => {
    for (const p of ['(?=a)', '(?!a)b', '(?<=a)b', '(a)\\1', '\\bword', '\\p{L}', '(?<n>a)\\k<n>']) {
      expect(() => compileGrammar({ regex: p }, tok), p).toThrow(GrammarError);
    }
  });
});
