// Constrained decoding: grammars (JSON Schema, GBNF, regex) compiled into token masks.
export { compileGrammar, grammarDefinition, type GrammarSpec } from './compile-grammar.js';
export { GrammarMatcher } from './matcher.js';
export { GrammarError, UnsupportedSchemaError } from './errors.js';
export type { JsonSchemaOptions } from './json-schema.js';
