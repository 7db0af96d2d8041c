// allOf "where mergeable": subschemas folded into one schema with the same meaning, keyword by
// keyword (types intersected, bounds tightened, properties merged with each side's
// additionalProperties applied to the other's names, required united, anyOf distributed). Where
// two subschemas cannot be folded exactly (two different patterns or formats, two prefixItems),
// it is an UnsupportedSchemaError naming allOf.
import { UnsupportedSchemaError } from './errors.js';

type Schema = Record<string, unknown> | boolean;
type Obj = Record<string, unknown>;

/** Most anyOf branches a distribution may produce. */
const MAX_BRANCHES = 256;

const ANNOTATIONS = new Set(['$schema', '$id', '$anchor', '$comment', 'title', 'description', 'default', 'examples', 'deprecated',
  'readOnly', 'writeOnly', 'contentEncoding', 'contentMediaType', 'contentSchema', '$defs', 'definitions', '$vocabulary']);

const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'string', 'integer'];

function typeSet(s: Obj): Set<string> | null {
  const t = s['type'];
  if (t === undefined) return null;
  return new Set(Array.isArray(t) ? (t as string[]) : [t as string]);
}

function intersectTypes(a: Set<string> | null, b: Set<string> | null): Set<string> | null {
  if (a === null) return b;
  if (b === null) return a;
  const out = new Set<string>();
  for (const t of TYPES) {
    const inA = a.has(t) || (t === 'integer' && a.has('number'));
    const inB = b.has(t) || (t === 'integer' && b.has('number'));
    if (inA && inB) out.add(t);
  }
  if (out.has('number')) out.delete('integer');
  return out;
}

const stable = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) =>
  x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([p], [q]) => (p < q ? -1 : 1))) : x);

/** One schema with the meaning of both; `pointer` and `keyword` name what combined them, in errors. */
export function mergeSchemas(x: Schema, y: Schema, pointer: string, keyword: string): Schema {
  if (x === true) return y;
  if (y === true) return x;
  if (x === false || y === false) return false;
  const a = x;
  const b = y;
  const out: Obj = {};
  const fail = (why: string): never => {
    throw new UnsupportedSchemaError(keyword, pointer, why);
  };
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    if (ANNOTATIONS.has(k)) continue;
    const va = a[k];
    const vb = b[k];
    if (va === undefined || vb === undefined) {
      out[k] = va ?? vb;
      continue;
    }
    switch (k) {
      case 'type': {
        const t = intersectTypes(typeSet(a), typeSet(b))!;
        if (t.size === 0) return false;
        out[k] = [...t];
        break;
      }
      case 'minimum': case 'exclusiveMinimum': case 'minLength': case 'minItems': case 'minProperties':
        out[k] = Math.max(va as number, vb as number);
        break;
      case 'maximum': case 'exclusiveMaximum': case 'maxLength': case 'maxItems': case 'maxProperties':
        out[k] = Math.min(va as number, vb as number);
        break;
      case 'required':
        out[k] = [...new Set([...(va as string[]), ...(vb as string[])])];
        break;
      case 'enum': case 'const': {
        const keep = new Set((k === 'const' ? [vb] : (vb as unknown[])).map(stable));
        out[k] = k === 'const' ? (keep.has(stable(va)) ? va : fail('two different consts')) : (va as unknown[]).filter((v) => keep.has(stable(v)));
        break;
      }
      case 'multipleOf': {
        const m = va as number;
        const n = vb as number;
        if (m === n) out[k] = m;
        else if (Number.isInteger(m) && Number.isInteger(n)) out[k] = (m / gcd(m, n)) * n;
        else fail('two different non-integer multipleOf values');
        break;
      }
      case 'items': case 'additionalItems': case 'additionalProperties':
        out[k] = { allOf: [va, vb] };
        break;
      case 'properties':
        break;
      case 'anyOf': case 'oneOf': {
        const branches: unknown[] = [];
        for (const p of va as unknown[]) for (const q of vb as unknown[]) branches.push({ allOf: [p, q] });
        if (branches.length > MAX_BRANCHES) fail(`distributing two ${k} lists gives more than ${MAX_BRANCHES} branches`);
        out[k] = branches;
        break;
      }
      case 'allOf':
        out[k] = [...(va as unknown[]), ...(vb as unknown[])];
        break;
      default:
        if (stable(va) !== stable(vb)) fail(`two different values of '${k}'`);
        out[k] = va;
    }
  }
  // A property one side names and the other does not meets the other's additionalProperties.
  const pa = (a['properties'] ?? {}) as Obj;
  const pb = (b['properties'] ?? {}) as Obj;
  if (a['properties'] !== undefined || b['properties'] !== undefined) {
    const props: Obj = {};
    for (const name of new Set([...Object.keys(pa), ...Object.keys(pb)])) {
      const sa = Object.hasOwn(pa, name) ? pa[name] : (a['additionalProperties'] ?? true);
      const sb = Object.hasOwn(pb, name) ? pb[name] : (b['additionalProperties'] ?? true);
      props[name] = sa === true ? sb : sb === true ? sa : { allOf: [sa, sb] };
    }
    out['properties'] = props;
  }
  if (out['anyOf'] !== undefined && out['oneOf'] !== undefined) {
    const branches: unknown[] = [];
    for (const p of out['anyOf'] as unknown[]) for (const q of out['oneOf'] as unknown[]) branches.push({ allOf: [p, q] });
    if (branches.length > MAX_BRANCHES) fail(`distributing anyOf over oneOf gives more than ${MAX_BRANCHES} branches`);
    out['anyOf'] = branches;
    delete out['oneOf'];
  }
  // One side's items apply to every position; the other's only after its prefixItems.
  for (const [p, q] of [[a, b], [b, a]] as const) {
    if (p['prefixItems'] === undefined || q['items'] === undefined) continue;
    if (q['prefixItems'] !== undefined) {
      if (stable(a['prefixItems']) !== stable(b['prefixItems'])) fail('two different prefixItems');
      continue;
    }
    out['prefixItems'] = (p['prefixItems'] as unknown[]).map((s) => ({ allOf: [s, q['items']] }));
    out['items'] = p['items'] === undefined ? q['items'] : { allOf: [p['items'], q['items']] };
  }
  return out;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
