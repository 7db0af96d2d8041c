// The structured-output fields of each protocol, read into the chat layer's ResponseFormat:
// Chat Completions `response_format`, Responses `text.format`, Anthropic `output_config.format`
// (and the beta's `output_format`). A schema is compiled here once, so a keyword kiln cannot
// enforce is a 400 naming the field, the keyword and its JSON pointer before anything runs.
import { InvalidArgumentError } from '../errors.js';
import { checkGrammar } from '../grammar/compile-grammar.js';
import { GrammarError, UnsupportedSchemaError } from '../grammar/errors.js';
import type { ResponseFormat } from '../runtime/chat.js';
import { type Fields, invalid } from './fields.js';

function checked(format: ResponseFormat, param: string): ResponseFormat {
  if (format.type !== 'json_schema') return format;
  try {
    checkGrammar({ jsonSchema: format.schema });
  } catch (err) {
    if (err instanceof UnsupportedSchemaError || err instanceof GrammarError) err.param = param;
    throw err;
  }
  return format;
}

/** Chat Completions: `{type: 'text' | 'json_object'}` or `{type: 'json_schema', json_schema: {name, schema, strict}}`. */
export function readChatResponseFormat(f: Fields): ResponseFormat | undefined {
  const rf = f.object('response_format');
  if (rf === undefined) return undefined;
  const type = rf.oneOf('type', ['text', 'json_object', 'json_schema']);
  if (type === undefined) throw new InvalidArgumentError(`'response_format.type' is required: "text", "json_object" or "json_schema".`, 'response_format.type');
  if (type !== 'json_schema') return { type };
  const js = rf.object('json_schema', { required: true })!;
  js.string('name', { required: true });
  const schema = js.raw('schema') ?? { type: 'object' };
  if (typeof schema !== 'boolean' && (typeof schema !== 'object' || Array.isArray(schema))) throw invalid(js.at('schema'), 'a JSON Schema object', schema);
  const strict = js.boolean('strict');
  return checked({ type, schema, ...(strict !== undefined ? { strict } : {}) }, 'response_format.json_schema.schema');
}

/** Responses: `text.format` as `{type: 'text' | 'json_object'}` or `{type: 'json_schema', name, schema, strict}`. */
export function readResponsesTextFormat(f: Fields): ResponseFormat | undefined {
  const format = f.object('text')?.object('format');
  if (format === undefined) return undefined;
  const type = format.oneOf('type', ['text', 'json_object', 'json_schema']);
  if (type === undefined) throw new InvalidArgumentError(`'text.format.type' is required: "text", "json_object" or "json_schema".`, 'text.format.type');
  if (type !== 'json_schema') return { type };
  format.string('name', { required: true });
  const schema = format.object('schema', { required: true })!.obj;
  const strict = format.boolean('strict');
  return checked({ type, schema, ...(strict !== undefined ? { strict } : {}) }, 'text.format.schema');
}

/** Anthropic: `output_config.format` (or the beta's `output_format`), `{type: 'json_schema', schema}`. */
export function readAnthropicOutputFormat(f: Fields): ResponseFormat | undefined {
  const config = f.object('output_config');
  const current = config?.object('format');
  const beta = f.object('output_format');
  if (current !== undefined && beta !== undefined) {
    throw new InvalidArgumentError(`send 'output_config.format' or the deprecated 'output_format', not both.`, 'output_format');
  }
  const format = current ?? beta;
  if (format === undefined) return undefined;
  if (format.oneOf('type', ['json_schema']) === undefined) throw new InvalidArgumentError(`'${format.at('type')}' is required: "json_schema".`, format.at('type'));
  const schema = format.object('schema', { required: true })!.obj;
  return checked({ type: 'json_schema', schema }, format.at('schema'));
}
