// Typed reads of untrusted request JSON. Every read names the field's path in the error
// (`messages[2].content`), so a 400 says exactly what to fix. Unknown fields are never read, so
// they are ignored.
import { InvalidArgumentError } from '../errors.js';

/** Longer strings than this in a single field are not a real request (the body limit caps the total). */
export const MAX_STRING_FIELD = 64 * 1024 * 1024;
/** OpenAI's limits on `metadata` (API reference: at most 16 pairs, keys of 64 and values of 512 characters). */
export const MAX_METADATA_PAIRS = 16;
export const MAX_METADATA_KEY = 64;
export const MAX_METADATA_VALUE = 512;

export type JsonObject = Record<string, unknown>;

export function describeJson(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return v.length > 40 ? `a string (${JSON.stringify(v.slice(0, 40))}...)` : `the string ${JSON.stringify(v)}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function invalid(path: string, expected: string, found: unknown): InvalidArgumentError {
  return new InvalidArgumentError(`'${path}' must be ${expected}, got ${describeJson(found)}.`, path);
}

export function missing(path: string, expected: string): InvalidArgumentError {
  return new InvalidArgumentError(`'${path}' is required: send ${expected}.`, path);
}

export class Fields {
  constructor(readonly obj: JsonObject, readonly path = '') {}

  /** The request body, which must be a JSON object. */
  static body(body: unknown): Fields {
    if (body === undefined) throw new InvalidArgumentError('The request body is empty: send a JSON object.');
    if (!isObject(body)) {
      throw new InvalidArgumentError(`The request body must be a JSON object, got ${describeJson(body)}.`);
    }
    return new Fields(body);
  }

  at(key: string): string {
    return this.path ? `${this.path}.${key}` : key;
  }

  /** The raw value; null counts as absent, as the OpenAI API treats it. */
  raw(key: string): unknown {
    const v = Object.hasOwn(this.obj, key) ? this.obj[key] : undefined;
    return v === null ? undefined : v;
  }

  has(key: string): boolean {
    return this.raw(key) !== undefined;
  }

  string(key: string, opts: { required: true; nonEmpty?: boolean }): string;
  string(key: string, opts?: { required?: false; nonEmpty?: boolean }): string | undefined;
  string(key: string, opts: { required?: boolean; nonEmpty?: boolean } = {}): string | undefined {
    const v = this.raw(key);
    if (v === undefined) {
      if (opts.required) throw missing(this.at(key), 'a string');
      return undefined;
    }
    if (typeof v !== 'string') throw invalid(this.at(key), 'a string', v);
    if (opts.nonEmpty && v.length === 0) throw invalid(this.at(key), 'a non-empty string', v);
    if (v.length > MAX_STRING_FIELD) throw invalid(this.at(key), `a string of at most ${MAX_STRING_FIELD} characters`, v);
    return v;
  }

  oneOf<T extends string>(key: string, values: readonly T[]): T | undefined {
    const v = this.raw(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
      throw invalid(this.at(key), `one of ${values.map((x) => JSON.stringify(x)).join(', ')}`, v);
    }
    return v as T;
  }

  number(key: string, opts: { min?: number; max?: number; integer?: boolean; required?: boolean } = {}): number | undefined {
    const v = this.raw(key);
    if (v === undefined) {
      if (opts.required) throw missing(this.at(key), opts.integer ? 'an integer' : 'a number');
      return undefined;
    }
    const { min = -Number.MAX_VALUE, max = Number.MAX_VALUE } = opts;
    const kind = opts.integer ? 'an integer' : 'a number';
    const range = opts.min !== undefined && opts.max !== undefined ? ` in [${min}, ${max}]`
      : opts.min !== undefined ? ` >= ${min}` : opts.max !== undefined ? ` <= ${max}` : '';
    if (typeof v !== 'number' || !Number.isFinite(v) || (opts.integer && !Number.isSafeInteger(v)) || v < min || v > max) {
      throw invalid(this.at(key), kind + range, v);
    }
    return v;
  }

  boolean(key: string): boolean | undefined {
    const v = this.raw(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') throw invalid(this.at(key), 'true or false', v);
    return v;
  }

  object(key: string, opts: { required?: boolean } = {}): Fields | undefined {
    const v = this.raw(key);
    if (v === undefined) {
      if (opts.required) throw missing(this.at(key), 'an object');
      return undefined;
    }
    if (!isObject(v)) throw invalid(this.at(key), 'an object', v);
    return new Fields(v, this.at(key));
  }

  array(key: string, opts: { required?: boolean; nonEmpty?: boolean; max?: number } = {}): unknown[] | undefined {
    const v = this.raw(key);
    if (v === undefined) {
      if (opts.required) throw missing(this.at(key), 'an array');
      return undefined;
    }
    if (!Array.isArray(v)) throw invalid(this.at(key), 'an array', v);
    if (opts.nonEmpty && v.length === 0) throw invalid(this.at(key), 'a non-empty array', v);
    if (opts.max !== undefined && v.length > opts.max) {
      throw new InvalidArgumentError(`'${this.at(key)}' may have at most ${opts.max} entries, got ${v.length}.`, this.at(key));
    }
    return v;
  }

  /** The objects of an array field, each as Fields with its indexed path. */
  objects(key: string, opts: { required?: boolean; nonEmpty?: boolean; max?: number } = {}): Fields[] | undefined {
    const arr = this.array(key, opts);
    if (arr === undefined) return undefined;
    return arr.map((item, i) => {
      const path = `${this.at(key)}[${i}]`;
      if (!isObject(item)) throw invalid(path, 'an object', item);
      return new Fields(item, path);
    });
  }

  /** A field kiln does not implement: accepted only absent or at its "off" value. */
  unsupported(key: string, isOff: (v: unknown) => boolean): void {
    const v = this.raw(key);
    if (v !== undefined && !isOff(v)) {
      throw new InvalidArgumentError(`'${this.at(key)}' is not supported by this server; leave it out.`, this.at(key));
    }
  }

  /** OpenAI's `metadata`: a flat object of short strings, within OpenAI's limits (it is stored and echoed). */
  metadata(key = 'metadata'): Record<string, string> | undefined {
    const m = this.object(key);
    if (m === undefined) return undefined;
    const keys = Object.keys(m.obj);
    if (keys.length > MAX_METADATA_PAIRS) {
      throw new InvalidArgumentError(`'${m.path}' may have at most ${MAX_METADATA_PAIRS} key-value pairs, got ${keys.length}.`, m.path);
    }
    const out: Record<string, string> = {};
    for (const k of keys) {
      if (k.length > MAX_METADATA_KEY) throw invalid(m.path, `an object whose keys have at most ${MAX_METADATA_KEY} characters`, k);
      const v = m.obj[k];
      if (typeof v !== 'string' || v.length > MAX_METADATA_VALUE) throw invalid(m.at(k), `a string of at most ${MAX_METADATA_VALUE} characters`, v);
      out[k] = v;
    }
    return out;
  }

  /** A string or a list of strings (OpenAI's `stop`), as a list. */
  stringList(key: string, opts: { max: number }): string[] | undefined {
    const v = this.raw(key);
    if (v === undefined) return undefined;
    const list = typeof v === 'string' ? [v] : v;
    if (!Array.isArray(list) || list.some((s) => typeof s !== 'string' || s.length === 0)) {
      throw invalid(this.at(key), 'a non-empty string or an array of non-empty strings', v);
    }
    if (list.length > opts.max) {
      throw new InvalidArgumentError(`'${this.at(key)}' may have at most ${opts.max} entries, got ${list.length}.`, this.at(key));
    }
    return list as string[];
  }
}
