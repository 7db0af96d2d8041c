// JSON Schema -> grammar. Output is JSON text with the schema's property order and, by default,
// no whitespace (one spelling per value, the compact form JSON.stringify writes); `whitespace:
// 'flexible'` allows whitespace between tokens. Each object and array schema is a rule, $ref
// targets are rules (so recursive schemas work), and the shared pieces (a free string, any JSON
// value) are builtin rules every grammar spells the same way, so their token masks are computed
// once per vocabulary. A keyword kiln cannot enforce is an UnsupportedSchemaError naming it and
// its JSON pointer; keywords outside JSON Schema's vocabulary are ignored, as the spec says.
import { intersect } from './automaton-ops.js';
import { CALL, complementRanges, type Expr, type GrammarDefinition, type GrammarRule, alt, chars, EMPTY, lit, NOTHING, opt, ref, repeat, seq, star } from './expr.js';
import { GrammarError, UnsupportedSchemaError } from './errors.js';
import { FORMATS } from './json-formats.js';
import { Grammar } from './grammar.js';
import { DEAD, EMPTY_STACK, Pda } from './pda.js';
import { mergeSchemas } from './json-schema-merge.js';
import { ANY_INTEGER, ANY_NUMBER, numberExpr, type NumberConstraints } from './json-numbers.js';
import { MAX_NESTING, MAX_REPEAT } from './limits.js';
import { charSet, regexExpr, RegexSyntaxError } from './regex.js';

export interface JsonSchemaOptions {
  /** 'compact' (default): no whitespace; 'flexible': up to a newline and 20 spaces or tabs between tokens. */
  whitespace?: 'compact' | 'flexible';
}

type Obj = Record<string, unknown>;

/** Keywords that only annotate (or hold subschemas reached through $ref). */
const ANNOTATIONS = new Set(['$schema', '$id', '$anchor', '$comment', 'title', 'description', 'default', 'examples', 'deprecated',
  'readOnly', 'writeOnly', 'contentEncoding', 'contentMediaType', 'contentSchema', '$defs', 'definitions', '$vocabulary', '$dynamicAnchor']);
const SUPPORTED = new Set(['type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'additionalItems',
  'minItems', 'maxItems', 'minLength', 'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
  'multipleOf', 'anyOf', 'oneOf', 'allOf', '$ref', 'minProperties', 'maxProperties', 'uniqueItems', 'if', 'then', 'else',
  'minContains', 'maxContains']);
/** JSON Schema keywords that assert something kiln cannot enforce while decoding. */
const UNSUPPORTED = new Set(['not', 'dependentSchemas', 'dependentRequired', 'dependencies', 'patternProperties', 'propertyNames',
  'unevaluatedProperties', 'unevaluatedItems', 'contains', '$dynamicRef', '$recursiveRef', '$recursiveAnchor']);
const STRUCTURAL = ['properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'additionalItems', 'minItems', 'maxItems',
  'minProperties', 'maxProperties'];
const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'integer', 'string'] as const;
type TypeName = (typeof TYPES)[number];

const INT_FORMATS: Record<string, [string, string]> = {
  int32: ['-2147483648', '2147483647'],
  int64: ['-9223372036854775808', '9223372036854775807'],
};

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const escapePointer = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

/** A character of a string value as JSON writes it: any character or escape. */
const STRING_CHAR = alt(
  chars([0x20, 0x21, 0x23, 0x5b, 0x5d, 0x10ffff]),
  seq(lit('\\'), alt(chars([0x22, 0x22, 0x2f, 0x2f, 0x5c, 0x5c, 0x62, 0x62, 0x66, 0x66, 0x6e, 0x6e, 0x72, 0x72, 0x74, 0x74]),
    seq(lit('u'), repeat(chars([0x30, 0x39, 0x41, 0x46, 0x61, 0x66]), 4, 4)))),
);
/** One spelling per character, JSON.stringify's: for strings under patterns, formats and lengths. */
const CANONICAL_CHAR = charSet([0, 0x10ffff], 'json');

/** Edges of one object's members automaton: all-optional properties need about n²/2. */
const MAX_MEMBER_EDGES = 500_000;

/** Constrained strings and numbers kept across schemas (they cost the most to build: intersections). */
const STRING_BODIES = new Map<string, Expr>();
const NUMBER_BODIES = new Map<string, Expr>();
const MAX_CACHED_BODIES = 256;

function cached(cache: Map<string, Expr>, key: string, build: () => Expr): Expr {
  let e = cache.get(key);
  if (e === undefined) {
    e = build();
    if (cache.size >= MAX_CACHED_BODIES) cache.delete(cache.keys().next().value!);
  } else {
    cache.delete(key);
  }
  cache.set(key, e);
  return e;
}

export function jsonSchemaGrammar(schema: unknown, options: JsonSchemaOptions = {}): GrammarDefinition {
  return new SchemaCompiler(schema, options).compile();
}

class SchemaCompiler {
  private readonly rules: Array<{ name: string; body: Expr; eager?: boolean }> = [];
  private readonly builtins = new Map<string, number>();
  private readonly targets = new Map<object, number>();
  private readonly ws: Expr;
  private depth = 0;

  constructor(private readonly root: unknown, options: JsonSchemaOptions) {
    const mode = options.whitespace ?? 'compact';
    if (mode !== 'compact' && mode !== 'flexible') throw new GrammarError(`whitespace must be 'compact' or 'flexible', got ${String(mode)}`);
    this.ws = mode === 'compact' ? EMPTY : opt(alt(lit(' '), seq(repeat(lit('\n'), 1, 2), repeat(chars([0x09, 0x09, 0x20, 0x20]), 0, 20))));
  }

  compile(): GrammarDefinition {
    // Refuse a keyword kiln cannot enforce wherever it is, before merging subschemas could hide where it was.
    findUnsupported(this.root, '', 0);
    const root = this.rule('root', () => this.value(this.root, ''));
    return { rules: this.rules as GrammarRule[], root };
  }

  private rule(name: string, body: () => Expr): number {
    const index = this.rules.length;
    this.rules.push({ name, body: NOTHING });
    this.rules[index]!.body = body();
    return index;
  }

  private builtin(name: string, body: () => Expr, eager = false): Expr {
    return ref(this.builtinRule(name, body, eager));
  }

  private builtinRule(name: string, body: () => Expr, eager = false): number {
    let index = this.builtins.get(name);
    if (index === undefined) {
      index = this.rules.length;
      this.builtins.set(name, index);
      this.rules.push({ name, body: NOTHING, eager });
      this.rules[index]!.body = body();
    }
    return index;
  }

  /** Structural text with the whitespace the options allow around it. */
  private punct(text: string): Expr {
    return seq(this.ws, lit(text), this.ws);
  }

  private anyString(): Expr {
    return this.builtin('string', () => seq(lit('"'), star(STRING_CHAR), lit('"')));
  }

  private anyValue(): Expr {
    return this.builtin('value', () => {
      const value = this.builtins.get('value')!;
      const member = seq(this.anyString(), this.punct(':'), ref(value));
      const object = seq(lit('{'), this.ws, opt(seq(member, star(seq(this.punct(','), member)))), this.ws, lit('}'));
      const array = seq(lit('['), this.ws, opt(seq(ref(value), star(seq(this.punct(','), ref(value))))), this.ws, lit(']'));
      return alt(object, array, this.anyString(), ANY_NUMBER, lit('true'), lit('false'), lit('null'));
    });
  }

  private value(schema: unknown, ptr: string): Expr {
    if (schema === true) return this.anyValue();
    if (schema === false) return NOTHING;
    if (!isObj(schema)) throw new GrammarError(`the schema at '${ptr || '/'}' must be an object or a boolean`);
    if (++this.depth > MAX_NESTING) throw new GrammarError(`the schema nests more than ${MAX_NESTING} levels deep`);
    try {
      return this.objectSchema(schema, ptr);
    } finally {
      this.depth--;
    }
  }

  private objectSchema(s: Obj, ptr: string): Expr {
    let assertions = 0;
    for (const k of Object.keys(s)) {
      if (UNSUPPORTED.has(k)) throw new UnsupportedSchemaError(k, ptr);
      if (SUPPORTED.has(k)) assertions++;
    }
    if (s['$id'] !== undefined && ptr !== '') throw new UnsupportedSchemaError('$id', ptr, 'only the root schema may set $id');
    if (s['uniqueItems'] === true) throw new UnsupportedSchemaError('uniqueItems', ptr);
    if (s['if'] !== undefined && (s['then'] !== undefined || s['else'] !== undefined)) throw new UnsupportedSchemaError('if', ptr);

    const ref$ = s['$ref'];
    if (ref$ !== undefined) {
      if (typeof ref$ !== 'string') throw new GrammarError(`'$ref' at '${ptr || '/'}' must be a string`);
      const target = this.resolve(ref$, ptr);
      if (assertions === 1) return ref(this.target(target.schema, target.pointer));
      const { $ref: _, ...rest } = s;
      return this.value(mergeSchemas(rest as Obj, target.schema as Obj, ptr, '$ref'), ptr);
    }
    if (s['allOf'] !== undefined) {
      const list = this.list(s, 'allOf', ptr);
      const { allOf: _, ...rest } = s;
      let merged: Obj | boolean = rest;
      list.forEach((branch, i) => {
        merged = mergeSchemas(merged, this.inline(branch, `${ptr}/allOf/${i}`), ptr, 'allOf');
      });
      return this.value(merged, ptr);
    }
    for (const key of ['anyOf', 'oneOf'] as const) {
      if (s[key] === undefined) continue;
      if (s['anyOf'] !== undefined && s['oneOf'] !== undefined) return this.value(mergeSchemas({ anyOf: s['anyOf'] }, { oneOf: s['oneOf'] }, ptr, 'oneOf'), ptr);
      const list = this.list(s, key, ptr);
      const { [key]: _, ...rest } = s;
      const restAsserts = Object.keys(rest).some((k) => SUPPORTED.has(k));
      // oneOf is enforced as anyOf: an instance matching more than one branch is allowed (see README).
      return alt(...list.map((branch, i) => {
        const p = `${ptr}/${key}/${i}`;
        return restAsserts ? this.value(mergeSchemas(rest, this.inline(branch, p), ptr, key), p) : this.value(branch, p);
      }));
    }
    if (s['const'] !== undefined || s['enum'] !== undefined) return this.enumeration(s, ptr);

    const types = this.types(s, ptr);
    return alt(...types.map((t) => this.typed(t, s, ptr)));
  }

  private list(s: Obj, key: string, ptr: string): unknown[] {
    const v = s[key];
    if (!Array.isArray(v) || v.length === 0) throw new GrammarError(`'${key}' at '${ptr || '/'}' must be a non-empty array of schemas`);
    return v;
  }

  /** A subschema with its own $ref followed, for merging. */
  private inline(s: unknown, ptr: string): Obj | boolean {
    for (let hops = 0; isObj(s) && typeof s['$ref'] === 'string'; hops++) {
      if (hops > MAX_NESTING) throw new GrammarError(`'$ref' at '${ptr || '/'}' never reaches a schema`);
      const { $ref: r, ...rest } = s;
      const t = this.resolve(r as string, ptr);
      s = Object.keys(rest).some((k) => SUPPORTED.has(k)) ? mergeSchemas(rest, t.schema as Obj, ptr, '$ref') : t.schema;
    }
    if (s === true || s === false) return s;
    if (!isObj(s)) throw new GrammarError(`the schema at '${ptr || '/'}' must be an object or a boolean`);
    return s;
  }

  private target(schema: unknown, pointer: string): number {
    if (typeof schema === 'boolean') return this.rule(pointer || 'root', () => this.value(schema, pointer));
    let index = this.targets.get(schema as object);
    if (index === undefined) {
      index = this.rules.length;
      this.targets.set(schema as object, index);
      this.rules.push({ name: pointer || 'root', body: NOTHING });
      this.rules[index]!.body = this.value(schema, pointer);
    }
    return index;
  }

  private resolve(r: string, ptr: string): { schema: unknown; pointer: string } {
    const rootId = isObj(this.root) && typeof this.root['$id'] === 'string' ? this.root['$id'] : null;
    let fragment: string;
    if (r.startsWith('#')) fragment = r.slice(1);
    else if (rootId !== null && (r === rootId || r.startsWith(rootId + '#'))) fragment = r.slice(rootId.length + 1);
    else throw new UnsupportedSchemaError('$ref', ptr, `'${r}' is not a reference inside this schema`);
    if (fragment !== '' && !fragment.startsWith('/')) {
      const found = findAnchor(this.root, decodeURIComponent(fragment), '');
      if (found === null) throw new GrammarError(`'$ref' '${r}' at '${ptr || '/'}' names no $anchor of this schema`);
      return found;
    }
    let at: unknown = this.root;
    const parts = fragment === '' ? [] : fragment.slice(1).split('/');
    for (const raw of parts) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (Array.isArray(at) && /^\d+$/.test(key)) at = at[Number(key)];
      else if (isObj(at) && Object.hasOwn(at, key)) at = at[key];
      else throw new GrammarError(`'$ref' '${r}' at '${ptr || '/'}' points to nothing in this schema`);
    }
    return { schema: at, pointer: fragment };
  }

  private types(s: Obj, ptr: string): TypeName[] {
    const t = s['type'];
    if (t === undefined) return TYPES.filter((x) => x !== 'integer');
    const list = Array.isArray(t) ? t : [t];
    for (const x of list) {
      if (!TYPES.includes(x as TypeName)) throw new GrammarError(`'type' at '${ptr || '/'}' has an unknown type ${JSON.stringify(x)}`);
    }
    const set = new Set(list as TypeName[]);
    if (set.has('number')) set.delete('integer');
    return TYPES.filter((x) => set.has(x));
  }

  private typed(t: TypeName, s: Obj, ptr: string): Expr {
    switch (t) {
      case 'null': return lit('null');
      case 'boolean': return alt(lit('true'), lit('false'));
      case 'integer': case 'number': return this.number(t === 'integer', s, ptr);
      case 'string': return this.string(s, ptr);
      case 'array': return ref(this.rule(`${ptr || 'root'} array`, () => this.array(s, ptr)));
      case 'object': return ref(this.rule(`${ptr || 'root'} object`, () => this.object(s, ptr)));
    }
  }

  private num(s: Obj, key: string, ptr: string): number | undefined {
    const v = s[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new GrammarError(`'${key}' at '${ptr || '/'}' must be a number`);
    return v;
  }

  private count(s: Obj, key: string, ptr: string): number | undefined {
    const v = this.num(s, key, ptr);
    if (v === undefined) return undefined;
    if (!Number.isInteger(v) || v < 0) throw new GrammarError(`'${key}' at '${ptr || '/'}' must be a non-negative integer`);
    if (v > MAX_REPEAT && !key.startsWith('max')) throw new UnsupportedSchemaError(key, ptr, `values above ${MAX_REPEAT} are not supported`);
    return v;
  }

  private number(integer: boolean, s: Obj, ptr: string): Expr {
    const c: NumberConstraints = { integer };
    for (const key of ['minimum', 'maximum'] as const) {
      const v = this.num(s, key, ptr);
      if (v === undefined) continue;
      // Draft 4 wrote an exclusive bound as a boolean beside minimum/maximum.
      const excl = s[key === 'minimum' ? 'exclusiveMinimum' : 'exclusiveMaximum'];
      if (excl === true) c[key === 'minimum' ? 'exclusiveMinimum' : 'exclusiveMaximum'] = v;
      else c[key] = v;
    }
    for (const key of ['exclusiveMinimum', 'exclusiveMaximum'] as const) {
      if (typeof s[key] === 'boolean') continue;
      const v = this.num(s, key, ptr);
      const prev = c[key] as number | undefined;
      if (v !== undefined) c[key] = prev === undefined ? v : key === 'exclusiveMinimum' ? Math.max(v, prev) : Math.min(v, prev);
    }
    const m = this.num(s, 'multipleOf', ptr);
    if (m !== undefined) {
      if (m <= 0) throw new GrammarError(`'multipleOf' at '${ptr || '/'}' must be greater than 0`);
      c.multipleOf = m;
    }
    const format = s['format'];
    // Other formats say nothing about numbers (string formats apply to strings only; OpenAPI's
    // float and double say how a value is stored).
    const intFormat = typeof format === 'string' ? INT_FORMATS[format] : undefined;
    if (intFormat !== undefined && !integer) throw new UnsupportedSchemaError('format', ptr, `'${String(format)}' on a number`);
    const key = JSON.stringify([c, intFormat ?? null]);
    return cached(NUMBER_BODIES, key, () => {
      const e = numberExpr(c);
      if (e === null) throw new UnsupportedSchemaError('multipleOf', ptr, `${m} (kiln enforces integer multipleOf up to 100000 and powers of ten below one)`);
      if (intFormat === undefined) return e;
      const range = numberExpr({ integer: true, minimum: intFormat[0], maximum: intFormat[1] })!;
      return e === ANY_INTEGER || e === ANY_NUMBER ? range : intersect(e, range);
    });
  }

  private string(s: Obj, ptr: string): Expr {
    const minLength = this.count(s, 'minLength', ptr);
    const maxLength = this.count(s, 'maxLength', ptr);
    const pattern = s['pattern'];
    const format = s['format'];
    if (minLength === undefined && maxLength === undefined && pattern === undefined && format === undefined) return this.anyString();
    if (maxLength !== undefined && maxLength > MAX_REPEAT) throw new UnsupportedSchemaError('maxLength', ptr, `values above ${MAX_REPEAT} are not supported`);
    if (pattern !== undefined && typeof pattern !== 'string') throw new GrammarError(`'pattern' at '${ptr || '/'}' must be a string`);
    const formatPattern = format === undefined ? undefined : typeof format === 'string' ? FORMATS[format] : undefined;
    if (format !== undefined && formatPattern === undefined) throw new UnsupportedSchemaError('format', ptr, `'${String(format)}' is not a string format kiln enforces`);
    // A rule per distinct set of string constraints, its text cached across schemas: the same
    // format or pattern compiles once, and its masks are shared by signature.
    const key = JSON.stringify([minLength, maxLength, pattern, format]);
    return this.builtin(`string ${key}`, () => cached(STRING_BODIES, key, () => {
      const parts: Expr[] = [];
      if (minLength !== undefined || maxLength !== undefined) parts.push(repeat(CANONICAL_CHAR, minLength ?? 0, maxLength ?? Infinity));
      if (pattern !== undefined) {
        try {
          parts.push(regexExpr(pattern as string, { anchored: false, encoding: 'json' }));
        } catch (err) {
          if (err instanceof RegexSyntaxError) throw new UnsupportedSchemaError('pattern', ptr, err.message);
          throw err;
        }
      }
      if (formatPattern !== undefined) parts.push(regexExpr(formatPattern, { anchored: true, encoding: 'json' }));
      return seq(lit('"'), parts.reduce((a, b) => intersect(a, b)), lit('"'));
    }), true);
  }

  private array(s: Obj, ptr: string): Expr {
    const tuple = Array.isArray(s['prefixItems']) ? s['prefixItems'] : Array.isArray(s['items']) ? s['items'] : [];
    const restKey = Array.isArray(s['prefixItems']) || !Array.isArray(s['items']) ? 'items' : 'additionalItems';
    const restSchema = s[restKey] ?? true;
    const min = this.count(s, 'minItems', ptr) ?? 0;
    const maxRaw = this.count(s, 'maxItems', ptr);
    const max = maxRaw ?? Infinity;
    const tupleKey = Array.isArray(s['prefixItems']) ? 'prefixItems' : 'items';
    const items = tuple.map((t, i) => this.value(t, `${ptr}/${tupleKey}/${i}`));
    const rest = this.value(restSchema, `${ptr}/${restKey}`);
    const p = items.length;
    const restMax = max === Infinity ? Infinity : max - p;
    if (restMax !== Infinity && restMax > MAX_REPEAT && restSchema !== false) throw new UnsupportedSchemaError('maxItems', ptr, `values above ${MAX_REPEAT} are not supported`);
    const comma = this.punct(',');
    // Elements from position i on, the first of them after a comma when i > 0.
    const from = (i: number): Expr => {
      if (i >= max) return EMPTY;
      if (i < p) {
        const element = seq(i > 0 ? comma : EMPTY, items[i]!, from(i + 1));
        return i < min ? element : opt(element);
      }
      if (restSchema === false) return min > p ? NOTHING : EMPTY;
      const lo = Math.max(0, min - p);
      if (p > 0) return repeat(seq(comma, rest), lo, restMax);
      const tail = repeat(seq(comma, rest), Math.max(0, lo - 1), restMax === Infinity ? Infinity : restMax - 1);
      return lo > 0 ? seq(rest, tail) : opt(seq(rest, tail));
    };
    return seq(lit('['), this.ws, from(0), this.ws, lit(']'));
  }

  private object(s: Obj, ptr: string): Expr {
    const props = isObj(s['properties']) ? s['properties'] : {};
    if (s['properties'] !== undefined && !isObj(s['properties'])) throw new GrammarError(`'properties' at '${ptr || '/'}' must be an object`);
    const required = s['required'] ?? [];
    if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) throw new GrammarError(`'required' at '${ptr || '/'}' must be an array of strings`);
    const names = Object.keys(props);
    for (const r of required as string[]) if (!names.includes(r)) names.push(r);
    const req = new Set(required as string[]);
    const colon = this.punct(':');
    const declared: Array<{ name: string; kv: number; required: boolean }> = [];
    for (const name of names) {
      const schema = Object.hasOwn(props, name) ? props[name] : true;
      if (schema === false) {
        if (req.has(name)) return NOTHING;
        continue;
      }
      const p = `${ptr}/properties/${escapePointer(name)}`;
      const kv = this.rule(`${p} member`, () => seq(lit(JSON.stringify(name)), colon, this.value(schema, p)));
      declared.push({ name, kv, required: req.has(name) });
    }
    const additional = s['additionalProperties'] ?? true;
    let extra = -1;
    if (additional !== false) {
      const p = `${ptr}/additionalProperties`;
      const key = this.keyNotIn(names);
      extra = this.rule(`${p} member`, () => seq(key, colon, this.value(additional, p)));
    }
    const minP = this.count(s, 'minProperties', ptr) ?? 0;
    const maxP = this.count(s, 'maxProperties', ptr) ?? Infinity;
    if (maxP !== Infinity && maxP > MAX_REPEAT) throw new UnsupportedSchemaError('maxProperties', ptr, `values above ${MAX_REPEAT} are not supported`);
    return seq(lit('{'), this.ws, this.members(declared, extra, minP, maxP), this.ws, lit('}'));
  }

  /**
   * The members in schema order, optional ones skippable, then extra members, as one automaton:
   * states (position, members so far, whether a comma is due), members counted only as far as
   * the min/maxProperties bounds need. Built deterministic (from each state, a call to every
   * member that may come next, past the optional ones), since epsilon chains over many optional
   * properties would cost the subset construction cubic time.
   */
  private members(declared: Array<{ kv: number; required: boolean }>, extra: number, min: number, max: number): Expr {
    const cap = max !== Infinity ? max : min;
    const n = declared.length;
    const comma = this.builtinRule('comma', () => this.punct(','));
    const ids = new Map<string, number>();
    const edges: number[] = [];
    const accepting: number[] = [];
    const work: Array<[number, number, number, number]> = [];
    let states = 0;
    const id = (k: number, c: number, e: number): number => {
      const key = `${k},${c},${e}`;
      let s = ids.get(key);
      if (s === undefined) {
        ids.set(key, (s = states++));
        work.push([s, k, c, e]);
      }
      return s;
    };
    id(0, 0, 0);
    while (work.length > 0) {
      const [from, k, c, e] = work.pop()!;
      const bump = Math.min(c + 1, cap);
      const full = max !== Infinity && c >= max;
      // After a comma when one is due: one state for it, shared by every member that may follow.
      let at = from;
      if (e === 1 && !full) {
        at = states++;
        edges.push(from, CALL, comma, at);
      }
      let j = k;
      for (; j < n; j++) {
        if (!full) edges.push(at, CALL, declared[j]!.kv, id(j + 1, bump, 1));
        if (declared[j]!.required) break;
      }
      if (j < n) continue;
      if (c >= min) accepting.push(from);
      if (extra >= 0 && !full) edges.push(at, CALL, extra, id(n, bump, 1));
      if (edges.length > MAX_MEMBER_EDGES * 4) {
        throw new GrammarError(`the schema is too large: an object's ${n} properties (optional ones and property counts multiply the ways to write it) need more than ${MAX_MEMBER_EDGES} automaton edges`);
      }
    }
    return { type: 'graph', states, edges, accepting };
  }

  /** A key that names none of `names` (one spelling per key, so no declared name can hide behind escapes). */
  private keyNotIn(names: string[]): Expr {
    interface Trie { next: Map<number, Trie>; end: boolean }
    const root: Trie = { next: new Map(), end: false };
    for (const n of names) {
      let t = root;
      for (const ch of n) {
        const c = ch.codePointAt(0)!;
        let child = t.next.get(c);
        if (child === undefined) t.next.set(c, (child = { next: new Map(), end: false }));
        t = child;
      }
      t.end = true;
    }
    const rest = this.builtin('key rest', () => seq(star(CANONICAL_CHAR), lit('"')));
    const nonAscii = this.builtin('key rest after a non-ASCII character', () => seq(chars([0x80, 0x10ffff]), rest));
    const body = (t: Trie): Expr => {
      const parts: Expr[] = [];
      const used: number[] = [];
      for (const [c, child] of t.next) {
        parts.push(seq(charSet([c, c], 'json'), body(child)));
        used.push(c, c);
      }
      // Any non-ASCII character diverges from ASCII names the same way everywhere: one shared rule.
      const others = complementRanges(used);
      const ascii = others.length >= 2 && used.every((c) => c < 0x80) && others[others.length - 1] === 0x10ffff && others[others.length - 2]! <= 0x80;
      if (ascii) {
        const cut = others.slice();
        cut[cut.length - 1] = 0x7f;
        if (cut[cut.length - 2]! <= 0x7f) parts.push(seq(charSet(cut, 'json'), rest));
        parts.push(nonAscii);
      } else {
        parts.push(seq(charSet(others, 'json'), rest));
      }
      if (!t.end) parts.push(lit('"'));
      return alt(...parts);
    };
    return seq(lit('"'), body(root));
  }

  private enumeration(s: Obj, ptr: string): Expr {
    const values = s['const'] !== undefined ? [s['const']] : s['enum'];
    if (!Array.isArray(values)) throw new GrammarError(`'enum' at '${ptr || '/'}' must be an array`);
    for (const k of STRUCTURAL) if (s[k] !== undefined) throw new UnsupportedSchemaError('enum', ptr, `together with '${k}'`);
    const list = s['const'] !== undefined && s['enum'] !== undefined
      ? (s['enum'] as unknown[]).filter((v) => JSON.stringify(v) === JSON.stringify(s['const']))
      : values;
    const rest: Obj = {};
    for (const k of Object.keys(s)) if (SUPPORTED.has(k) && k !== 'enum' && k !== 'const') rest[k] = s[k];
    // The other keywords filter the values: each value's text must match their grammar.
    const check = Object.keys(rest).length === 0 ? null : jsonSchemaGrammar(rest);
    const keep = check === null ? list : list.filter((v) => matchesGrammar(check, JSON.stringify(v)));
    return alt(...keep.map((v) => lit(JSON.stringify(v))));
  }
}

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMA_LISTS = ['prefixItems', 'allOf', 'anyOf', 'oneOf', 'items'];
const SCHEMA_VALUES = ['items', 'additionalProperties', 'additionalItems', 'not', 'if', 'then', 'else', 'contains', 'propertyNames',
  'unevaluatedItems', 'unevaluatedProperties'];

function findUnsupported(s: unknown, ptr: string, depth: number): void {
  if (!isObj(s) || depth > MAX_NESTING) return;
  for (const k of Object.keys(s)) if (UNSUPPORTED.has(k)) throw new UnsupportedSchemaError(k, ptr);
  for (const k of SCHEMA_MAPS) {
    if (isObj(s[k])) for (const [name, sub] of Object.entries(s[k])) findUnsupported(sub, `${ptr}/${k}/${escapePointer(name)}`, depth + 1);
  }
  for (const k of SCHEMA_LISTS) {
    const list = s[k];
    if (Array.isArray(list)) list.forEach((sub, i) => findUnsupported(sub, `${ptr}/${k}/${i}`, depth + 1));
  }
  for (const k of SCHEMA_VALUES) findUnsupported(s[k], `${ptr}/${k}`, depth + 1);
}

function findAnchor(node: unknown, name: string, pointer: string): { schema: unknown; pointer: string } | null {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const f = findAnchor(node[i], name, `${pointer}/${i}`);
      if (f !== null) return f;
    }
    return null;
  }
  if (!isObj(node)) return null;
  if (node['$anchor'] === name) return { schema: node, pointer };
  for (const [k, v] of Object.entries(node)) {
    if (k === 'enum' || k === 'const') continue;
    const f = findAnchor(v, name, `${pointer}/${escapePointer(k)}`);
    if (f !== null) return f;
  }
  return null;
}

/** Whether the grammar matches exactly this text. */
function matchesGrammar(def: GrammarDefinition, text: string): boolean {
  const pda = new Pda(new Grammar(def));
  let set = pda.closure([pda.push(pda.grammar.ruleStart[def.root]!, EMPTY_STACK)]);
  for (const b of new TextEncoder().encode(text)) {
    if (set === DEAD) return false;
    set = pda.step(set, b);
  }
  return set !== DEAD && pda.hasEmpty[set] === 1;
}
