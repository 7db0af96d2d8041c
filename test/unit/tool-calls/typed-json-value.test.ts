import { describe, expect, it } from 'vitest';
import { paramTypeOf } from '../../../src/tool-calls/tool-set.js';
import { typedJsonValue } from '../../../src/tool-calls/typed-json-value.js';

const T = (schema: unknown) => paramTypeOf(schema);

describe('typedJsonValue (qwen3_coder values by schema type)', () => {
  it('strings and enums stay the raw text', () => {
    expect(typedJsonValue('42', T({ type: 'string' }))).toBe('"42"');
    expect(typedJsonValue('{"a": 1}', T({ type: 'string' }))).toBe('"{\\"a\\": 1}"');
    expect(typedJsonValue('null', T({ type: ['string', 'null'] }))).toBe('"null"');
    expect(typedJsonValue('celsius', T({ enum: ['celsius'] }))).toBe('"celsius"');
    expect(typedJsonValue(' x\t\u0001"\\é😀', T(undefined))).toBe('" x\\t\\u0001\\"\\\\é😀"');
  });

  it('integers keep their digits, above 2^53 too', () => {
    expect(typedJsonValue('42', T({ type: 'integer' }))).toBe('42');
    expect(typedJsonValue(' 12345678901234567890 ', T({ type: 'integer' }))).toBe('12345678901234567890');
    expect(typedJsonValue('+007', T({ type: 'integer' }))).toBe('7');
    expect(typedJsonValue('-000', T({ type: 'integer' }))).toBe('0');
    expect(typedJsonValue('4.5', T({ type: 'integer' }))).toBe('"4.5"');
    expect(typedJsonValue('many', T({ type: 'integer' }))).toBe('"many"');
  });

  it('numbers keep the model text', () => {
    expect(typedJsonValue('6.02e23', T({ type: 'number' }))).toBe('6.02e23');
    expect(typedJsonValue('3.14', T({ type: 'float' }))).toBe('3.14');
    expect(typedJsonValue('+3', T({ type: 'number' }))).toBe('3');
    expect(typedJsonValue('1.', T({ type: 'number' }))).toBe('"1."');
  });

  it('booleans, Python style too', () => {
    expect(typedJsonValue('True', T({ type: 'boolean' }))).toBe('true');
    expect(typedJsonValue('false', T({ type: 'boolean' }))).toBe('false');
    expect(typedJsonValue('yes', T({ type: 'boolean' }))).toBe('"yes"');
  });

  it('objects and arrays when they are JSON of that kind, verbatim', () => {
    expect(typedJsonValue('{"b": 1,\n "a": [2]}', T({ type: 'object' }))).toBe('{"b": 1,\n "a": [2]}');
    expect(typedJsonValue('[1, 2]', T({ type: 'object' }))).toBe('"[1, 2]"');
    expect(typedJsonValue("{'a': 1}", T({ type: 'object' }))).toBe('"{\'a\': 1}"');
    expect(typedJsonValue('["a"]', T({ type: 'array' }))).toBe('["a"]');
  });

  it('anyOf / oneOf / type arrays use the first non-null type, and null where allowed', () => {
    expect(T({ anyOf: [{ type: 'integer' }, { type: 'null' }] })).toEqual({ kind: 'integer', nullable: true });
    expect(T({ oneOf: [{ type: 'null' }, { type: 'array' }] })).toEqual({ kind: 'array', nullable: true });
    expect(T({ type: ['integer', 'null'] })).toEqual({ kind: 'integer', nullable: true });
    expect(T({ anyOf: [{ type: 'string' }, { type: 'integer' }] })).toEqual({ kind: 'string', nullable: false });
    expect(typedJsonValue('null', T({ type: ['integer', 'null'] }))).toBe('null');
    expect(typedJsonValue('None', T({ anyOf: [{ type: 'object' }, { type: 'null' }] }))).toBe('null');
    expect(typedJsonValue('null', T({ type: 'integer' }))).toBe('"null"');
  });

  it('a million-digit integer costs linear time', () => {
    const big = `+${'0'.repeat(10)}${'9'.repeat(2_000_000)}`;
    const t0 = Date.now();
    expect(typedJsonValue(big, T({ type: 'integer' })).length).toBe(2_000_000);
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});
