// Turns one qwen3_coder parameter value (raw text between the framing newlines) into JSON text,
// typed by the tool's schema. Typed values keep the model's own text where it already is JSON
// (so `6.02e23`, big integers and key order survive); text that does not fit its type stays a
// string, so nothing the model wrote is lost.
import { escapeJsonString } from './escape-json-string.js';
import { isJsonValue, JsonValueScanner } from './json-value-scanner.js';
import type { ParamType } from './tool-set.js';

const INTEGER = /^[+-]?\d+$/;
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

const scanner = new JsonValueScanner();

export function typedJsonValue(raw: string, type: ParamType): string {
  if (type.kind === 'string') return `"${escapeJsonString(raw)}"`;
  const t = raw.trim();
  if (type.nullable || type.kind === 'null') {
    if (t === 'null' || t === 'None') return 'null';
  }
  switch (type.kind) {
    case 'integer':
      // BigInt keeps integers above 2^53 exact and normalises `+7` / `007` to JSON.
      if (INTEGER.test(t)) return BigInt(t).toString();
      break;
    case 'number':
      if (JSON_NUMBER.test(t)) return t;
      if (INTEGER.test(t)) return BigInt(t).toString();
      break;
    case 'boolean': {
      const b = t.toLowerCase();
      if (b === 'true' || b === 'false') return b;
      break;
    }
    case 'object':
    case 'array': {
      const open = type.kind === 'object' ? '{' : '[';
      if (t.startsWith(open) && isJsonValue(t, scanner)) return t;
      break;
    }
    case 'null':
      break;
  }
  return `"${escapeJsonString(raw)}"`;
}
