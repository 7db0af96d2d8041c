// Random replies for the fuzz test and `npm run bench -- streamer --fuzz N`: markers of every
// format (whole and cut short), JSON and XML pieces, multibyte and control characters, and valid
// calls with random damage, so both the valid and the broken paths are exercised.
import type { Prng } from '../../helpers/prng.js';
import type { ToolCallFormat } from '../../../src/tool-calls/types.js';
import { checkRun, MARKERS, randomChunks, streamChunks } from './harness.js';

const FORMATS: ToolCallFormat[] = ['hermes', 'mistral', 'llama3_json', 'qwen3_coder'];

const PIECES = [
  ...MARKERS,
  '<tool',
  '[TOOL_',
  '</param',
  '<|python',
  '<think',
  '</',
  '<',
  '[',
  ']',
  '{',
  '}',
  '"',
  '\\',
  '\\"',
  '\\u00e9',
  '\\ud83d',
  ':',
  ',',
  ';',
  ' ',
  '  ',
  '\n',
  '\r\n',
  '\t',
  '"name"',
  '"arguments"',
  '"parameters"',
  '"id"',
  '"type"',
  '"function"',
  '"search"',
  '"get_weather"',
  '"nope"',
  '"q"',
  '"abc123XYZ"',
  '1',
  '-2.5e3',
  '0',
  'true',
  'null',
  'search',
  'nope',
  'abc123XYZ',
  '<function=search>',
  '<function=nope>',
  '<function=calculate_area>',
  '<parameter=q>',
  '<parameter=precision>',
  '<parameter=dimensions>',
  '<function=test_types>',
  '<parameter=obj_param>',
  '<parameter=arr>',
  'True',
  'None',
  "'",
  'hello',
  'é',
  '😀',
  '日本',
  '\u0000',
  '\u001f',
  '\u2028',
];

const VALID: Record<ToolCallFormat, string[]> = {
  hermes: [
    '<tool_call>\n{"name": "search", "arguments": {"q": "a b"}}\n</tool_call>',
    '<tool_call>{"arguments": {"q": [1, {"x": "</tool_call>"}]}, "name": "search"}</tool_call>',
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Zürich 😀"}}',
  ],
  mistral: [
    '[TOOL_CALLS][{"name": "search", "arguments": {"q": "a"}}, {"id": "abc123XYZ", "name": "get_weather", "arguments": {}}]',
    '[TOOL_CALLS]search[ARGS]{"q": "x"}',
    '[TOOL_CALLS]search[CALL_ID]abc123XYZ[ARGS]{"q": "[ARGS]"}',
  ],
  llama3_json: [
    '{"name": "search", "parameters": {"q": "x"}}',
    '<|python_tag|>{"name": "search", "arguments": {"q": 1}}; {"name": "get_weather", "parameters": {}}',
    '{"type": "function", "name": "search", "parameters": {"q": "{"}}',
  ],
  qwen3_coder: [
    '<tool_call>\n<function=search>\n<parameter=q>\na </parameter> b\n</parameter>\n</function>\n</tool_call>',
    '<tool_call>\n<function=calculate_area>\n<parameter=precision>\n 7 \n</parameter>\n<parameter=dimensions>\n{"w": 1}\n</parameter>\n</function>\n</tool_call>',
    '<tool_call>\n<function=search>\n</function>',
    '<tool_call>\n<function=test_types>\n<parameter=obj_param>{"a": [1, "</parameter>"], "b": {"c": null}}</parameter>\n<parameter=arr>\n[true, {"d": -2.5e3}]\n</parameter>\n</function>\n</tool_call>',
    "<tool_call>\n<function=test_types>\n<parameter=opt_obj>\n{'a': True}\n</parameter>\n<parameter=opt_arr>[]</parameter>\n</function>\n</tool_call>",
  ],
};

export function fuzzText(rng: Prng, format: ToolCallFormat): string {
  const parts: string[] = [];
  const n = 1 + rng.int(12);
  for (let k = 0; k < n; k++) {
    const r = rng.next();
    if (r < 0.3) {
      // A valid call, sometimes damaged: a piece inserted or a stretch cut out.
      let call = rng.pick(VALID[format]);
      if (rng.next() < 0.4) {
        const at = rng.int(call.length + 1);
        call = rng.next() < 0.5 ? call.slice(0, at) + rng.pick(PIECES) + call.slice(at) : call.slice(0, at) + call.slice(at + 1 + rng.int(6));
      }
      parts.push(call);
    } else if (r < 0.4) {
      parts.push(rng.pick(['<think>', '</think>']));
    } else {
      parts.push(rng.pick(PIECES));
    }
  }
  return parts.join('');
}

/** One random reply in a random format and a random chunking; throws on any broken invariant. */
export function fuzzOnce(rng: Prng): void {
  const format = rng.pick(FORMATS);
  const text = fuzzText(rng, format);
  // Sometimes pieces of UTF-16 units, which may split a surrogate pair.
  const chunks = randomChunks(text, rng, 1 + rng.int(16), rng.next() < 0.2);
  const startsInReasoning = rng.next() < 0.2;
  const run = streamChunks(chunks, { format, startsInReasoning });
  checkRun(run, chunks, true);
}
