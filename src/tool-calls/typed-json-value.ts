// Turns one qwen3_coder parameter value (raw text between the framing newlines) into JSON text,
// typed by the tool's schema. Typed values keep the model's own text where it already is JSON
// (so `6.02e23`, big integers and key order survive); text that does not fit its type stays a
// string, so nothing the model wrote is lost.
import { escapeJsonString } from './escape-json-string.js';
import { isJsonValue, JsonValueScanner } from './json-value-scanner.js';
import type { ParamType } from './tool-set.js';

const INTEGER = /^[+-]?\d+$/;
const CANONICAL_INTEGER = /^-?(?:0|[1-9]\d*)$/;
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
      if (INTEGER.test(t)) return integerJson(t);
      break;
    case 'number':
      if (JSON_NUMBER.test(t)) return t;
      if (INTEGER.test(t)) return integerJson(t);
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

/** True for the code units `String.prototype.trim` removes (the value's `raw.trim()` above). */
export function isTrimmedSpace(c: number): boolean {
  if (c < 0x80) return c === 32 || (c >= 9 && c <= 13);
  return (
    c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

/**
 * `+7` / `007` as JSON, digits kept as text: integers above 2^53 stay exact, and a million-digit
 * value costs linear time (BigInt parsing would be quadratic).
 */
function integerJson(t: string): string {
  if (CANONICAL_INTEGER.test(t)) return t;
  const negative = t.charCodeAt(0) === 45;
  const digits = t.replace(/^[+-]/, '').replace(/^0+(?=\d)/, '');
  return negative && digits !== '0' ? `-${digits}` : digits;
}
