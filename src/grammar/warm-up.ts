// What the grammar engine does once per vocabulary, before a user's first schema: the masks of the
// pieces every JSON grammar shares, and matchers of common schema shapes run over an instance each
// so that V8 has optimized compiling and stepping.
import { Grammar } from './grammar.js';
import { FORMATS } from './json-formats.js';
import { jsonSchemaGrammar } from './json-schema.js';
import { GrammarMatcher } from './matcher.js';
import { compiledGrammar, NodeMasks } from './node-masks.js';
import type { TokenIndex } from './token-index.js';

/** Both warm-ups, for the vocabulary of `index`. */
export function warmUp(index: TokenIndex): void {
  warmSharedMasks(index);
  warmUpMatcher(index);
}

/**
 * Computes the masks of the pieces JSON grammars share, so they never land on a request's first
 * tokens: a string's body, any JSON value and numbers (the largest walks: nearly every token fits
 * inside a string), and the string formats (their automata, class tries and masks: a format is the
 * same rule in every schema that names it, so its masks are shared).
 */
function warmSharedMasks(index: TokenIndex): void {
  // Any value (strings, numbers), and an object key that is not a declared name (additional properties).
  const schemas: unknown[] = [true, { properties: { a: true } }];
  for (const format of Object.keys(FORMATS)) schemas.push({ type: 'string', format });
  for (const schema of schemas) {
    const grammar = new Grammar(jsonSchemaGrammar(schema));
    const masks = new NodeMasks(grammar, index);
    for (let s = 0; s < grammar.stateCount; s++) if (grammar.hasBytes(s)) masks.get(s);
  }
}

/**
 * Schemas of the common shapes (objects with required and optional members, enums, arrays, unions,
 * nesting through $ref) and an instance of each, in schema order, compact.
 */
export const WARM_UP_CASES: ReadonlyArray<readonly [unknown, unknown]> = [
  [
    {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 40 },
        kind: { enum: ['file', 'directory', 'link'] },
        size: { type: 'integer', minimum: 0 },
        ratio: { type: ['number', 'null'] },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 8 },
        owner: { anyOf: [{ type: 'string', format: 'email' }, { type: 'boolean' }] },
      },
      required: ['name', 'kind', 'size'],
      additionalProperties: false,
    },
    { name: 'notes.txt', kind: 'file', size: 1024, ratio: 0.25, tags: ['a', 'b c'], owner: 'x@example.com' },
  ],
  [
    {
      $defs: { node: { type: 'object', properties: { id: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } }, required: ['id'] } },
      type: 'object',
      properties: { root: { $ref: '#/$defs/node' }, depth: { type: 'integer', minimum: 1, maximum: 9 }, when: { type: 'string', format: 'date-time' } },
      required: ['root', 'when'],
    },
    { root: { id: 'a', children: [{ id: 'b', children: [] }, { id: 'c' }] }, depth: 2, when: '2026-01-02T03:04:05Z' },
  ],
  [
    { type: 'array', items: { type: 'object', properties: { q: { type: 'string', pattern: '^[a-z]+(-[a-z]+)*$' }, n: { type: 'number' } }, required: ['q'] }, minItems: 1 },
    [{ q: 'alpha-beta', n: -1.5e3 }, { q: 'gamma' }],
  ],
];

/**
 * Runs matchers of the common schema shapes over an instance each, asking for every mask, so the
 * engine's code is optimized before a user's first schema (its first masks ran several times
 * slower on code the JIT had not seen). Once per vocabulary; the grammars are not cached. Each
 * instance is spelled in the longest allowed tokens (not by the tokenizer, whose spelling can
 * start with a space the grammar refuses). Returns how many instances the matchers took whole.
 */
export function warmUpMatcher(index: TokenIndex): number {
  let whole = 0;
  for (const [schema, instance] of WARM_UP_CASES) {
    const matcher = new GrammarMatcher(compiledGrammar(new Grammar(jsonSchemaGrammar(schema)), index));
    const text = new TextEncoder().encode(JSON.stringify(instance));
    let at = 0;
    while (at < text.length) {
      const id = longestAllowed(index, matcher.allowed(), text, at);
      if (id < 0 || !matcher.accept(id)) break;
      at += index.bytes[id]!.length;
    }
    matcher.allowed();
    if (at === text.length && matcher.canEnd()) whole++;
  }
  return whole;
}

/** The allowed token with the longest bytes that `text` continues with at `at`, or -1. */
function longestAllowed(index: TokenIndex, mask: Uint32Array, text: Uint8Array, at: number): number {
  const { trie } = index;
  let best = -1;
  let node = 0;
  for (let i = at; i < text.length; i++) {
    let child = node + 1;
    while (child < trie.nodeEnd[node]! && trie.nodeByte[child] !== text[i]) child = trie.nodeEnd[child]!;
    if (child >= trie.nodeEnd[node]!) break;
    node = child;
    for (let t = trie.nodeToken[node]!; t !== -1; t = trie.sameBytes[t]!) {
      if ((mask[t >>> 5]! >>> (t & 31)) & 1) {
        best = t;
        break;
      }
    }
  }
  return best;
}
