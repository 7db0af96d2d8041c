// Rule automata are minimal DFAs: the textbook case from Aho, Lam, Sethi and Ullman (Compilers,
// 2nd ed., Example 3.36 and Section 3.9.6): the subset construction of (a|b)*abb has five states,
// the minimal automaton four. Minimizing must not change the language: random strings are
// checked against JavaScript's RegExp.
import { describe, expect, test } from 'vitest';
import { regexExpr } from '../../../src/grammar/regex.js';
import { type RuleAutomaton, ruleAutomaton } from '../../../src/grammar/rule-automaton.js';
import { prng } from '../../helpers/prng.js';

function accepts(a: RuleAutomaton, text: string): boolean {
  let s = 0;
  for (const b of new TextEncoder().encode(text)) {
    const row = a.bytes[s]!;
    let next = -1;
    for (let i = 0; i < row.length; i += 3) if (row[i]! <= b && b <= row[i + 1]!) next = row[i + 2]!;
    if (next < 0) return false;
    s = next;
  }
  return a.accepting[s]!;
}

describe('rule automata', () => {
  test('(a|b)*abb has the four states of its minimal DFA', () => {
    const a = ruleAutomaton(regexExpr('(a|b)*abb', { anchored: true, encoding: 'raw' }));
    expect(a.accepting.length).toBe(4);
  });

  test.each(['(a|b)*abb', '(ab|ab)*c?', '[a-c]{2,5}(x|xy)*', '(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)', '(aa|a)*b{0,3}'])(
    '%s matches what RegExp matches',
    (source) => {
      const a = ruleAutomaton(regexExpr(source, { anchored: true, encoding: 'raw' }));
      const re = new RegExp(`^(?:${source})$`);
      const rnd = prng(7);
      const alphabet = 'abcxy019.';
      for (let k = 0; k < 3000; k++) {
        let text = '';
        const len = Math.floor(rnd.next() * 9);
        for (let i = 0; i < len; i++) text += alphabet[Math.floor(rnd.next() * alphabet.length)];
        expect(accepts(a, text), text).toBe(re.test(text));
      }
    },
  );
});
