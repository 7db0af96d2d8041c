// Test helpers: feed a text to a matcher token by token (as the model's tokenizer splits it),
// checking at every step that the mask allows the token accept() takes; and serialize an instance
// the way a constrained model writes it (compact, object keys in the schema's property order).
import type { GrammarMatcher } from '../../../src/grammar/matcher.js';
import type { Tokenizer } from '../../../src/tokenizer/tokenizer.js';

export type MatchOutcome = 'accepted' | 'refused' | 'incomplete';

export function allows(mask: Uint32Array, id: number): boolean {
  return ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;
}

/** Runs `text` through a fresh state of `m`; with `masks`, every token must also be in allowed(). */
export function matchText(m: GrammarMatcher, tok: Tokenizer, text: string, masks = true): MatchOutcome {
  m.reset();
  const ids = tok.encode(text, { addSpecial: false });
  // A tokenizer that normalizes (Qwen's NFC) cannot spell some texts in tokens: feed their bytes.
  if (tok.decode(ids) !== text) return m.acceptBytes(new TextEncoder().encode(text)) ? (m.canEnd() ? 'accepted' : 'incomplete') : 'refused';
  for (const id of ids) {
    const allowed = masks ? allows(m.allowed(), id) : null;
    const took = m.accept(id);
    if (allowed !== null && allowed !== took) throw new Error(`mask and accept() disagree on token ${id} (${JSON.stringify(tok.tokenToPiece(id))}) in ${JSON.stringify(text)}`);
    if (!took) return 'refused';
  }
  if (masks) {
    const eog = tok.eosId!;
    if (allows(m.allowed(), eog) !== m.canEnd()) throw new Error(`mask and canEnd() disagree at the end of ${JSON.stringify(text)}`);
  }
  return m.canEnd() ? 'accepted' : 'incomplete';
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Up to this many spellings of one instance (anyOf branches may order keys differently). */
const MAX_SPELLINGS = 8;

/**
 * The compact spellings of `value` with object keys in the order `schema` gives them (declared
 * properties first, in schema order, then the others as they come); one per way the schema's
 * branches can order them.
 */
export function schemaOrdered(value: unknown, schema: unknown, root: unknown): string[] {
  return [...new Set(spell(value, schema, root, 0))].slice(0, MAX_SPELLINGS);
}

function resolve(schema: unknown, root: unknown): unknown {
  for (let i = 0; i < 32 && isObj(schema) && typeof schema['$ref'] === 'string' && schema['$ref'].startsWith('#'); i++) {
    let at: unknown = root;
    for (const raw of schema['$ref'].slice(1).split('/').slice(1)) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      at = isObj(at) || Array.isArray(at) ? (at as Obj)[key] : undefined;
    }
    const { $ref: _, ...rest } = schema;
    schema = Object.keys(rest).some((k) => k === 'properties' || k === 'allOf') ? { allOf: [rest, at] } : at;
  }
  return schema;
}

/** The alternatives a schema stands for, each a list of schemas that all apply. */
function branches(schema: unknown, root: unknown, depth: number): unknown[][] {
  schema = resolve(schema, root);
  if (!isObj(schema) || depth > 16) return [[schema]];
  let out: unknown[][] = [[schema]];
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
    const list = schema[key];
    if (!Array.isArray(list)) continue;
    if (key === 'allOf') {
      for (const sub of list) {
        const subs = branches(sub, root, depth + 1);
        out = out.flatMap((o) => subs.map((s) => [...o, ...s]));
      }
    } else {
      out = out.flatMap((o) => list.flatMap((sub) => branches(sub, root, depth + 1).map((s) => [...o, ...s])));
    }
    out = out.slice(0, MAX_SPELLINGS);
  }
  return out;
}

function spell(value: unknown, schema: unknown, root: unknown, depth: number): string[] {
  if (Array.isArray(value)) {
    const alts = branches(schema, root, depth).map((list) => {
      const items = value.map((v, i) => {
        const subs = list.filter(isObj).map((s) => {
          const prefix = Array.isArray(s['prefixItems']) ? s['prefixItems'] : Array.isArray(s['items']) ? s['items'] : [];
          return i < prefix.length ? prefix[i] : Array.isArray(s['items']) ? s['additionalItems'] : s['items'];
        }).filter((s) => s !== undefined);
        return spell(v, subs.length > 0 ? { allOf: subs } : true, root, depth + 1)[0]!;
      });
      return `[${items.join(',')}]`;
    });
    return alts;
  }
  if (!isObj(value)) return [JSON.stringify(value)];
  return branches(schema, root, depth).map((list) => {
    // A const or enum object is written with its own key order.
    for (const s of list.filter(isObj)) {
      const options = s['const'] !== undefined ? [s['const']] : Array.isArray(s['enum']) ? s['enum'] : [];
      const same = options.find((o) => sorted(o) === sorted(value));
      if (same !== undefined) return JSON.stringify(same);
    }
    const order: string[] = [];
    const subschemas = new Map<string, unknown[]>();
    for (const s of list.filter(isObj)) {
      const props = isObj(s['properties']) ? s['properties'] : {};
      for (const k of Object.keys(props)) {
        if (!order.includes(k)) order.push(k);
        subschemas.set(k, [...(subschemas.get(k) ?? []), props[k]]);
      }
      for (const k of Array.isArray(s['required']) ? (s['required'] as string[]) : []) if (!order.includes(k)) order.push(k);
    }
    const keys = [...order.filter((k) => Object.hasOwn(value, k)), ...Object.keys(value).filter((k) => !order.includes(k))];
    const extra = list.filter(isObj).map((s) => s['additionalProperties']).filter((s) => s !== undefined);
    return `{${keys.map((k) => {
      const subs = subschemas.get(k) ?? extra;
      return `${JSON.stringify(k)}:${spell(value[k], subs.length > 0 ? { allOf: subs } : true, root, depth + 1)[0]!}`;
    }).join(',')}}`;
  });
}

function sorted(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (isObj(x) ? Object.fromEntries(Object.entries(x).sort(([p], [q]) => (p < q ? -1 : 1))) : x));
}
