// Real-world schemas (test/fixtures/json-schemas) on both vocabularies: ajv (an independent
// validator) first confirms each instance is valid or invalid as labelled; then each valid one,
// spelled compactly in schema order, passes the matcher token by token and can end, each invalid
// one is refused, and the schemas kiln refuses name the keyword and pointer expected.
import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, test } from 'vitest';
import { compileGrammar } from '../../../src/grammar/compile-grammar.js';
import { UnsupportedSchemaError } from '../../../src/grammar/errors.js';
import { chatTokenizer } from '../../fixtures/chat/tiny-chat-model.js';
import { matchText, schemaOrdered } from './match-text.js';
import { schemaCorpus } from './schema-corpus.js';

/** ajv with the formats the corpus uses, checked by independent means (WHATWG URL, Date). */
export function validator(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  const date = (s: string) => /^\d{4}-\d\d-\d\d$/.test(s) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s);
  ajv.addFormat('date', date);
  ajv.addFormat('date-time', (s: string) => /^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/.test(s) && date(s.slice(0, 10)) && !Number.isNaN(Date.parse(s)));
  ajv.addFormat('uri', (s: string) => {
    try {
      return /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/.test(s) && new URL(s).protocol.length > 1;
    } catch {
      return false;
    }
  });
  ajv.addFormat('email', /^[^\s@"]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/);
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
  return ajv;
}

function withoutMetaschema(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _, ...rest } = schema;
  return rest;
}

const corpus = schemaCorpus();
const ajv = validator();

describe('real-world schema corpus', () => {
  test.each(corpus.filter((c) => c.unsupported === undefined).map((c) => [`${c.file} ${c.name}`, c] as const))('ajv agrees with the labels: %s', (_, c) => {
    const validate = ajv.compile(withoutMetaschema(c.schema));
    for (const v of c.valid) expect(validate(v), JSON.stringify(v)).toBe(true);
    for (const v of c.invalid) expect(validate(v), JSON.stringify(v)).toBe(false);
  });

  for (const family of ['qwen3', 'llama3'] as const) {
    const tok = chatTokenizer(family);
    test.each(corpus.map((c) => [`${c.file} ${c.name}`, c] as const))(`${family}: %s`, (_, c) => {
      if (c.unsupported !== undefined) {
        let err: unknown;
        try {
          compileGrammar({ jsonSchema: c.schema }, tok);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(UnsupportedSchemaError);
        expect((err as UnsupportedSchemaError).keyword).toBe(c.unsupported);
        expect((err as UnsupportedSchemaError).pointer).toBe(c.pointer);
        expect((err as UnsupportedSchemaError).message).toContain(c.unsupported);
        return;
      }
      const m = compileGrammar({ jsonSchema: c.schema }, tok);
      for (const v of c.valid) {
        const spellings = schemaOrdered(v, c.schema, c.schema);
        expect(spellings.map((s) => matchText(m, tok, s)), `valid: ${JSON.stringify(v)}`).toContain('accepted');
      }
      for (const v of c.invalid) {
        const spellings = schemaOrdered(v, c.schema, c.schema);
        expect(spellings.map((s) => matchText(m, tok, s)), `invalid: ${JSON.stringify(v)}`).not.toContain('accepted');
      }
    });
  }
});
