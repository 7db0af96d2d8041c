// The grammar of a tool call from where its arguments begin to where the call closes, per format:
// the arguments as the tool's JSON schema allows them (qwen3_coder: its <parameter=...> blocks,
// strings as raw text, other values as JSON), then the format's closing, so a constrained call
// always parses. JSON arguments allow whitespace between tokens, as the chat templates write them.
import { intersect } from '../grammar/automaton-ops.js';
import { alt, chars, embedGrammar, type Expr, type GrammarDefinition, type GrammarRule, lit, MAX_CODE_POINT, opt, ref, repeat, seq, star } from '../grammar/expr.js';
import { jsonSchemaGrammar } from '../grammar/json-schema.js';
import type { OpenAITool, ToolCallFormat } from '../tool-calls/types.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The arguments schema of a tool; a tool without one takes any object. */
export function argumentsSchema(tool: OpenAITool): Obj {
  return tool.function.parameters ?? { type: 'object' };
}

/**
 * From the end of `opening` (the text that led into the call, as callOpenings spells it or as the
 * model wrote it) to the end of the call. `leadingSpace`: the opening ended at a colon, so the
 * blanks models write before a value may come first.
 */
export function callBodyGrammar(format: ToolCallFormat, tool: OpenAITool, opening: string, leadingSpace = false): GrammarDefinition {
  const rules: GrammarRule[] = [];
  let body: Expr;
  if (format === 'qwen3_coder') {
    body = seq(parametersExpr(rules, argumentsSchema(tool)), lit('</function>\n</tool_call>'));
  } else {
    const value = ref(embedGrammar(rules, jsonSchemaGrammar(argumentsSchema(tool), { whitespace: 'flexible' })));
    const args = leadingSpace ? seq(repeat(chars([0x09, 0x0a, 0x20, 0x20]), 0, 2), value) : value;
    switch (format) {
      case 'hermes':
        body = seq(args, lit('}\n</tool_call>'));
        break;
      case 'llama3_json':
        body = seq(args, lit('}'));
        break;
      case 'mistral':
        body = opening.endsWith('[CALL_ID]') ? seq(repeat(chars([0x30, 0x39, 0x41, 0x5a, 0x61, 0x7a]), 9, 9), lit('[ARGS]'), args)
          : opening.includes('[{') ? seq(args, lit('}]')) : args;
        break;
    }
  }
  rules.push({ name: 'call', body });
  return { rules, root: rules.length - 1 };
}

const PARAMETER_END = '\n</parameter>';

/** qwen3_coder's parameter blocks in the schema's order, required ones present. */
function parametersExpr(rules: GrammarRule[], schema: Obj): Expr {
  const props = isObj(schema['properties']) ? schema['properties'] : {};
  const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as string[]) : []);
  const names = [...Object.keys(props), ...[...required].filter((r) => !Object.hasOwn(props, r))];
  return seq(...names.map((name) => {
    const entry = seq(lit(`<parameter=${name}>\n`), valueExpr(rules, schema, name, props[name] ?? true), lit('\n'));
    return required.has(name) ? entry : opt(entry);
  }));
}

/** A parameter's value and the `\n</parameter>` after it. */
function valueExpr(rules: GrammarRule[], schema: Obj, name: string, prop: unknown): Expr {
  if (isObj(prop) && prop['type'] === 'string' && Object.keys(prop).every((k) => !['enum', 'const', 'pattern', 'format', 'minLength', 'maxLength'].includes(k))) {
    return textEndingIn(PARAMETER_END);
  }
  if (isObj(prop) && prop['type'] === 'string' && Array.isArray(prop['enum']) && prop['enum'].every((v) => typeof v === 'string')) {
    return seq(alt(...(prop['enum'] as string[]).map((v) => lit(v))), lit(PARAMETER_END));
  }
  // Any other value is written as JSON, checked against the property's schema (its $refs resolved in the tool's schema).
  const wrapper = { $defs: schema['$defs'], definitions: schema['definitions'], 'x-kiln-parameters': schema['properties'] ?? {}, $ref: `#/x-kiln-parameters/${name.replace(/~/g, '~0').replace(/\//g, '~1')}` };
  const root = isObj(schema['properties']) && Object.hasOwn(schema['properties'], name) ? wrapper : true;
  return seq(ref(embedGrammar(rules, jsonSchemaGrammar(root))), lit(PARAMETER_END));
}

/** Any text up to and including the first occurrence of `end` (ASCII): a KMP automaton over bytes, kept to whole characters. */
function textEndingIn(end: string): Expr {
  const p = Array.from(end, (c) => c.charCodeAt(0));
  const fail = new Array<number>(p.length).fill(0);
  for (let i = 1, k = 0; i < p.length; i++) {
    while (k > 0 && p[i] !== p[k]) k = fail[k - 1]!;
    if (p[i] === p[k]) k++;
    fail[i] = k;
  }
  const edges: number[] = [];
  for (let s = 0; s < p.length; s++) {
    for (let b = 0; b < 256; b++) {
      let k = s;
      while (k > 0 && p[k] !== b) k = fail[k - 1]!;
      const next = p[k] === b ? k + 1 : 0;
      edges.push(s, b, b, next);
    }
  }
  const kmp: Expr = { type: 'graph', states: p.length + 1, edges, accepting: [p.length] };
  return intersect(kmp, seq(star(chars([0, MAX_CODE_POINT])), lit(end)));
}
