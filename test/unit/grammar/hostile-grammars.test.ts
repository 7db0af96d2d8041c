// Grammars built to cost too much (nested and huge repetitions, exponential determinizations,
// deep nesting, self-references, huge enums, objects with thousands of optional properties) are
// refused with a GrammarError naming the problem, never a hang or a stack overflow.
import { describe, expect, it } from 'vitest';
import { checkGrammar, type GrammarSpec } from '../../../src/grammar/compile-grammar.js';
import { GrammarError } from '../../../src/grammar/errors.js';

const props = (n: number, extra: object = {}) => ({
  jsonSchema: { type: 'object', properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'string' }])), ...extra },
});

const REFUSED: Array<[string, GrammarSpec, RegExp]> = [
  ['nested repetitions', { regex: '(.{100}){100}' }, /too large/],
  ['an exponential determinization', { regex: '(a|b|c|d|e|f|g|h)*a(a|b|c|d|e|f|g|h){14}' }, /too large/],
  ['a repetition bound past the limit', { regex: 'a{5000}' }, /repetition bound/],
  ['a schema nested 300 deep', { jsonSchema: JSON.parse(`${'{"type":"object","properties":{"a":'.repeat(300)}{"type":"string"}${'}}'.repeat(300)}`) }, /nests more than/],
  ['a schema that is only a reference to itself', { jsonSchema: { $ref: '#' } }, /matches no text|left-recursive/],
  ['allOf of itself', { jsonSchema: { allOf: [{ $ref: '#' }] } }, /nests more than/],
  ['an enum of 50000 strings', { jsonSchema: { enum: Array.from({ length: 50_000 }, (_, i) => `value number ${i}`) } }, /too large/],
  ['2000 optional properties', props(2000), /too large/],
  ['300 counted properties', props(300, { maxProperties: 300 }), /too large/],
  ['GBNF groups nested 200 deep', { gbnf: `root ::= ${'('.repeat(200)}"a"${')'.repeat(200)}` }, /nested too deeply/],
];

describe('hostile grammars', () => {
  it.each(REFUSED)('%s is refused', (_, spec, why) => {
    let err: unknown;
    try {
      checkGrammar(spec);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GrammarError);
    expect((err as GrammarError).message).toMatch(why);
    expect((err as GrammarError).status).toBe(400);
  });

  it('large but real shapes still compile: 700 optional properties, a 1000-character string', () => {
    expect(() => checkGrammar(props(700))).not.toThrow();
    expect(() => checkGrammar({ jsonSchema: { type: 'string', maxLength: 1000 } })).not.toThrow();
  });
});
