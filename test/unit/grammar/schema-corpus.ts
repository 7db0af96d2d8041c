// The real-world schema corpus in test/fixtures/json-schemas/: tool schemas of agents and MCP
// servers, function-calling benchmark schemas, documentation examples and public payload
// schemas, each file with its provenance and valid and invalid instances.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface CorpusCase {
  file: string;
  name: string;
  schema: Record<string, unknown>;
  valid: unknown[];
  invalid: unknown[];
  /** For schemas kiln refuses: the keyword and JSON pointer the error names. */
  unsupported?: string;
  pointer?: string;
}

export const CORPUS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'json-schemas');

export function schemaCorpus(): CorpusCase[] {
  const out: CorpusCase[] = [];
  for (const file of readdirSync(CORPUS_DIR).filter((f) => f.endsWith('.json')).sort()) {
    const doc = JSON.parse(readFileSync(join(CORPUS_DIR, file), 'utf8')) as { source: string; cases: Array<Partial<CorpusCase> & { name: string; schema: Record<string, unknown> }> };
    if (typeof doc.source !== 'string' || doc.source.length === 0) throw new Error(`${file} has no provenance line`);
    for (const c of doc.cases) out.push({ ...c, valid: c.valid ?? [], invalid: c.invalid ?? [], file });
  }
  return out;
}
