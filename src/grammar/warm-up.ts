// Warming the grammar engine's code once per vocabulary: matchers of common schema shapes run
// over an instance each, so V8 has optimized compiling and stepping before a user's first schema.
import { Grammar } from './grammar.js';
import { jsonSchemaGrammar } from './json-schema.js';
import { GrammarMatcher } from './matcher.js';
import { NodeMasks } from './node-masks.js';
import type { TokenIndex } from './token-index.js';

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
    const grammar = new Grammar(jsonSchemaGrammar(schema));
    const nodeMasks = new NodeMasks(grammar, index);
    for (const rule of grammar.eagerRules) nodeMasks.classWalkOf(rule);
    const matcher = new GrammarMatcher({ grammar, index, nodeMasks });
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
