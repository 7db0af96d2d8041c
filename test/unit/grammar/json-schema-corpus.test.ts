// Real-world schemas (test/fixtures/json-schemas) on both vocabularies: ajv (an independent
// validator) first confirms each instance is valid or invalid as labelled; then each valid one,
// spelled compactly in schema order, passes the matcher token by token and can end, each invalid
// one is refused, and the schemas kiln refuses name the keyword and pointer expected.
import { describe, expect, test } from 'vitest';
import { compileGrammar } from '../../../src/grammar/compile-grammar.js';
import { UnsupportedSchemaError } from '../../../src/grammar/errors.js';
import { chatTokenizer } from '../../fixtures/chat/tiny-chat-model.js';
import { matchText } from './match-text.js';
import { schemaOrdered } from '../../fixtures/json-schemas/schema-ordered.js';
import { schemaCorpus } from '../../fixtures/json-schemas/corpus.js';
import { jsonValidator } from '../../helpers/json-validator.js';

function withoutMetaschema(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _, ...rest } = schema;
  return rest;
}

const corpus = schemaCorpus();
const ajv = jsonValidator();

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
