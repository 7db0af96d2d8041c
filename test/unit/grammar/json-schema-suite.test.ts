// The official JSON Schema Test Suite (draft 2020-12, ../shared/json-schema-test-suite) through
// compiled matchers on the Qwen3 vocabulary: for every schema kiln compiles, each valid instance
// (spelled compactly with keys in schema order) passes token by token and can end there, and each
// invalid one is refused at some token or cannot end. Schemas with keywords kiln does not enforce
// must fail to compile with UnsupportedSchemaError naming a keyword of theirs.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { compileGrammar } from '../../../src/grammar/compile-grammar.js';
import { GrammarError, UnsupportedSchemaError } from '../../../src/grammar/errors.js';
import { chatTokenizer } from '../../fixtures/chat/tiny-chat-model.js';
import { SHARED } from '../../helpers/paths.js';
import { KNOWN_DIFFERENCES, knownDifference } from './suite-known-differences.js';
import { matchText } from './match-text.js';
import { schemaOrdered } from '../../fixtures/json-schemas/schema-ordered.js';

const SUITE = join(SHARED, 'json-schema-test-suite', 'tests', 'draft2020-12');

interface Group { description: string; schema: unknown; tests: Array<{ description: string; data: unknown; valid: boolean }> }

function files(): string[] {
  const out: string[] = [];
  for (const dir of ['', 'optional', 'optional/format']) {
    for (const f of readdirSync(join(SUITE, dir))) if (f.endsWith('.json')) out.push(join(dir, f));
  }
  return out.sort();
}

const tok = chatTokenizer('qwen3');
const stats = { groups: 0, compiled: 0, unsupported: 0, valid: 0, invalid: 0 };
const used = new Set<string>();

describe('JSON Schema Test Suite, draft 2020-12', () => {
  for (const file of files()) {
    test(file, () => {
      const groups = JSON.parse(readFileSync(join(SUITE, file), 'utf8')) as Group[];
      const problems: string[] = [];
      for (const g of groups) {
        stats.groups++;
        let matcher;
        try {
          matcher = compileGrammar({ jsonSchema: g.schema }, tok);
        } catch (err) {
          if (!(err instanceof UnsupportedSchemaError) && !(err instanceof GrammarError)) throw err;
          stats.unsupported++;
          if (process.env['KILN_SUITE_VERBOSE']) console.log(`refused ${file} | ${g.description}: ${(err as Error).message}`);
          if (err instanceof UnsupportedSchemaError) {
            expect(JSON.stringify(g.schema), `${g.description}: the error names a keyword of the schema`).toContain(`"${err.keyword}"`);
          }
          continue;
        }
        stats.compiled++;
        for (const t of g.tests) {
          const id = `${file} | ${g.description} | ${t.description}`;
          const outcomes = schemaOrdered(t.data, g.schema, g.schema).map((text) => matchText(matcher, tok, text));
          const passed = t.valid ? outcomes.includes('accepted') : !outcomes.includes('accepted');
          if (t.valid) stats.valid++;
          else stats.invalid++;
          const known = knownDifference(id);
          if (!passed && known !== null) used.add(known);
          if (passed && (known === null || known !== id)) continue;
          if (!passed && known !== null) continue;
          problems.push(passed ? `now passes, remove from the known differences: ${id}` : `${t.valid ? 'over' : 'under'}-constrained: ${id} (${outcomes.join(', ')})`);
        }
      }
      expect(problems).toEqual([]);
    });
  }
  test('every known difference still happens', () => {
    expect(KNOWN_DIFFERENCES.map(([key]) => key).filter((key) => !used.has(key))).toEqual([]);
  });
  test('coverage', () => {
    console.log(`suite: ${stats.groups} schemas, ${stats.compiled} compiled, ${stats.unsupported} refused; ${stats.valid} valid and ${stats.invalid} invalid instances checked`);
  });
});
