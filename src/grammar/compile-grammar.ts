// compileGrammar(spec, tokenizer): a JSON Schema, a GBNF grammar or a regular expression, compiled
// for a model's vocabulary into a matcher (see GrammarMatcher). Compiling builds only the
// grammar's automata; token masks are computed when first asked for and shared with later
// grammars over the same vocabulary. The same spec compiled again reuses the compiled grammar.
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { GrammarDefinition } from './expr.js';
import { GrammarError } from './errors.js';
import { gbnfGrammar } from './gbnf.js';
import { Grammar } from './grammar.js';
import { jsonSchemaGrammar, type JsonSchemaOptions } from './json-schema.js';
import { type CompiledGrammar, GrammarMatcher } from './matcher.js';
import { compiledGrammar } from './node-masks.js';
import { regexExpr, RegexSyntaxError } from './regex.js';
import { type TokenIndex, tokenIndexOf } from './token-index.js';
import { warmUp } from './warm-up.js';

export type GrammarSpec =
  /** Output is JSON matching the schema (see the README for the supported keywords). */
  | ({ jsonSchema: unknown } & JsonSchemaOptions)
  /** Output matches the grammar, written in llama.cpp's GBNF; the start rule is `root`. */
  | { gbnf: string }
  /** Output matches the regular expression (ECMAScript syntax) as a whole. */
  | { regex: string };

/** Compiled grammars kept per vocabulary, by spec. */
const MAX_CACHED = 64;
const cache = new WeakMap<object, Map<string, CompiledGrammar>>();

/** The grammar rules a spec stands for. Throws GrammarError or UnsupportedSchemaError. */
export function grammarDefinition(spec: GrammarSpec): GrammarDefinition {
  if (spec === null || typeof spec !== 'object') throw new GrammarError('a grammar spec must be { jsonSchema }, { gbnf } or { regex }');
  const kinds = (['jsonSchema', 'gbnf', 'regex'] as const).filter((k) => k in spec && (spec as Record<string, unknown>)[k] !== undefined);
  if (kinds.length !== 1) throw new GrammarError(`a grammar spec must have exactly one of jsonSchema, gbnf or regex; got ${kinds.length === 0 ? 'none' : kinds.join(' and ')}`);
  if ('jsonSchema' in spec && spec.jsonSchema !== undefined) {
    return jsonSchemaGrammar(spec.jsonSchema, spec.whitespace !== undefined ? { whitespace: spec.whitespace } : {});
  }
  if ('gbnf' in spec && spec.gbnf !== undefined) {
    if (typeof spec.gbnf !== 'string') throw new GrammarError('gbnf must be a string');
    return gbnfGrammar(spec.gbnf);
  }
  const source = (spec as { regex: unknown }).regex;
  if (typeof source !== 'string') throw new GrammarError('regex must be a string');
  try {
    return { rules: [{ name: 'root', body: regexExpr(source, { anchored: true, encoding: 'raw' }) }], root: 0 };
  } catch (err) {
    if (err instanceof RegexSyntaxError) throw new GrammarError(`regex: ${err.message}`);
    throw err;
  }
}

const warmed = new WeakSet<TokenIndex>();

/** Throws the error compiling `spec` would (GrammarError, UnsupportedSchemaError), without a vocabulary. */
export function checkGrammar(spec: GrammarSpec): void {
  new Grammar(grammarDefinition(spec));
}

/**
 * Compiles `spec` for the vocabulary of `tokenizer` (what loadTokenizer() returns). The matcher
 * starts at the beginning of the grammar; `clone()` gives more matchers sharing its masks.
 */
export function compileGrammar(spec: GrammarSpec, tokenizer: Tokenizer): GrammarMatcher {
  return compileDefinition(() => grammarDefinition(spec), tokenizer, JSON.stringify(spec));
}

/**
 * A matcher for the grammar `define()` builds, reusing the one compiled before under the same
 * `key` for this vocabulary (the key must name the grammar exactly).
 */
export function compileDefinition(define: () => GrammarDefinition, tokenizer: Tokenizer, key: string): GrammarMatcher {
  const index = tokenIndexOf(tokenizer);
  if (!warmed.has(index)) {
    warmed.add(index);
    warmUp(index);
  }
  let byKey = cache.get(index);
  if (byKey === undefined) cache.set(index, (byKey = new Map()));
  let compiled = byKey.get(key);
  if (compiled === undefined) {
    compiled = compiledGrammar(new Grammar(define()), index);
    if (byKey.size >= MAX_CACHED) byKey.delete(byKey.keys().next().value!);
  } else {
    byKey.delete(key);
  }
  byKey.set(key, compiled);
  return new GrammarMatcher(compiled);
}
