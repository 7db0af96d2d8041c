// The tools a request declared, looked up by name, with each parameter's JSON type for typing
// qwen3_coder values. Requests are untrusted: malformed entries are skipped, never thrown on.
import type { OpenAITool } from './types.js';

/** How a qwen3_coder parameter value is turned into JSON. */
export type ParamKind = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'null';

export interface ParamType {
  kind: ParamKind;
  /** The schema also allows null, so a bare `null` value is JSON null. */
  nullable: boolean;
}

const STRING: ParamType = { kind: 'string', nullable: false };

const KIND_ALIASES: Record<string, ParamKind> = {
  string: 'string',
  str: 'string',
  text: 'string',
  integer: 'integer',
  int: 'integer',
  number: 'number',
  float: 'number',
  double: 'number',
  boolean: 'boolean',
  bool: 'boolean',
  object: 'object',
  dict: 'object',
  array: 'array',
  list: 'array',
  null: 'null',
};

interface ToolEntry {
  /** Parameter name to type; absent names are strings. */
  params: Map<string, ParamType>;
}

export class ToolSet {
  private readonly tools = new Map<string, ToolEntry>();

  constructor(tools: readonly OpenAITool[] | undefined) {
    if (!Array.isArray(tools)) return;
    for (const tool of tools) {
      const fn = (tool as { function?: unknown } | null)?.function as OpenAITool['function'] | undefined;
      if (!fn || typeof fn.name !== 'string' || fn.name.length === 0 || this.tools.has(fn.name)) continue;
      this.tools.set(fn.name, { params: readParams(fn.parameters) });
    }
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  paramType(tool: string, param: string): ParamType {
    return this.tools.get(tool)?.params.get(param) ?? STRING;
  }
}

function readParams(schema: unknown): Map<string, ParamType> {
  const out = new Map<string, ParamType>();
  const props = isObject(schema) ? schema['properties'] : undefined;
  if (!isObject(props)) return out;
  for (const name of Object.keys(props)) out.set(name, paramTypeOf(props[name]));
  return out;
}

/**
 * The first non-null type a schema names: `type: "T"`, `type: ["T", "null"]`, or the first
 * non-null branch of `anyOf` / `oneOf`. An enum without a type, or anything unrecognised, is a
 * string, which keeps the model's text unchanged.
 */
export function paramTypeOf(schema: unknown): ParamType {
  if (!isObject(schema)) return STRING;
  const kinds: ParamKind[] = [];
  collectKinds(schema, kinds);
  const nullable = kinds.includes('null');
  const kind = kinds.find((k) => k !== 'null') ?? (nullable ? 'null' : 'string');
  return { kind, nullable };
}

function collectKinds(schema: Record<string, unknown>, out: ParamKind[]): void {
  const type = schema['type'];
  if (typeof type === 'string') pushKind(type, out);
  else if (Array.isArray(type)) for (const t of type) if (typeof t === 'string') pushKind(t, out);
  // One level of anyOf / oneOf is what Pydantic's Optional[T] produces; deeper unions stay strings.
  for (const key of ['anyOf', 'oneOf']) {
    const branches = schema[key];
    if (!Array.isArray(branches)) continue;
    for (const b of branches) {
      if (!isObject(b)) continue;
      const t = b['type'];
      if (typeof t === 'string') pushKind(t, out);
      else if (Array.isArray(t)) for (const x of t) if (typeof x === 'string') pushKind(x, out);
    }
  }
}

function pushKind(type: string, out: ParamKind[]): void {
  const kind = KIND_ALIASES[type.trim().toLowerCase()];
  if (kind !== undefined) out.push(kind);
  else out.push('string');
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
