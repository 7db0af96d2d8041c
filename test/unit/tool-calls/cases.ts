// Table cases per format. Inputs follow the peers' published formats and test cases (vLLM's
// hermes, mistral, llama3_json and qwen3_coder parser tests); expected values follow kiln's
// semantics where they differ: text before, between and after calls stays content, arguments are
// the model's own text, and a bare llama3 JSON object counts only at the start of the output.
import type { ToolCallFormat } from '../../../src/tool-calls/types.js';

export interface Case {
  name: string;
  format: ToolCallFormat;
  text: string;
  content: string;
  reasoning?: string;
  /** [name, arguments] of each call. */
  calls: [string, string][];
  startsInReasoning?: boolean;
}

const q3 = (fn: string, params: [string, string][]): string =>
  `<tool_call>\n<function=${fn}>\n${params.map(([k, v]) => `<parameter=${k}>\n${v}\n</parameter>\n`).join('')}</function>\n</tool_call>`;

// One parameter, its value on its own lines or right after the `>`.
const lines = (k: string, v: string): string => `<parameter=${k}>\n${v}\n</parameter>\n`;
const inline = (k: string, v: string): string => `<parameter=${k}>${v}</parameter>\n`;
const q3call = (fn: string, ...params: string[]): string => `<tool_call>\n<function=${fn}>\n${params.join('')}</function>\n</tool_call>`;

const DALLAS = q3('get_current_weather', [['city', 'Dallas'], ['state', 'TX'], ['unit', 'fahrenheit']]);
const DALLAS_ARGS = '{"city":"Dallas","state":"TX","unit":"fahrenheit"}';

export const CASES: Case[] = [
  // ---- hermes ----
  { name: 'plain text', format: 'hermes', text: 'This is some prior text that has nothing to do with tool calling.', content: 'This is some prior text that has nothing to do with tool calling.', calls: [] },
  {
    name: 'newlines around the JSON (vLLM bug 19056)',
    format: 'hermes',
    text: '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>',
    content: '',
    calls: [['final_answer', '{"trigger": true}']],
  },
  {
    name: 'line breaks inside the JSON',
    format: 'hermes',
    text: '<tool_call>\n{"name": "get_current_temperature",\n"arguments": {"location":\n"San Francisco, California, United States", "unit": "celsius"}}\n</tool_call>',
    content: '',
    calls: [['get_current_temperature', '{"location":\n"San Francisco, California, United States", "unit": "celsius"}']],
  },
  {
    name: 'content before a call',
    format: 'hermes',
    text: 'Sure, let me check the weather.<tool_call>{"name": "get_weather", "arguments": {"city": "NYC"}}</tool_call>',
    content: 'Sure, let me check the weather.',
    calls: [['get_weather', '{"city": "NYC"}']],
  },
  {
    name: 'two calls back to back',
    format: 'hermes',
    text: '<tool_call>{"name": "search", "arguments": {"q": "cats"}}</tool_call><tool_call>{"name": "search", "arguments": {"q": "dogs"}}</tool_call>',
    content: '',
    calls: [['search', '{"q": "cats"}'], ['search', '{"q": "dogs"}']],
  },
  {
    name: 'text before, between and after calls',
    format: 'hermes',
    text: 'A<tool_call>{"name": "search", "arguments": {"q": "1"}}</tool_call>\nB\n<tool_call>{"name": "search", "arguments": {"q": "2"}}</tool_call>C',
    content: 'A\nB\nC',
    calls: [['search', '{"q": "1"}'], ['search', '{"q": "2"}']],
  },
  {
    name: 'unclosed block at the end of the output',
    format: 'hermes',
    text: '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}',
    content: '',
    calls: [['final_answer', '{"trigger": true}']],
  },
  {
    name: 'invalid JSON stays content',
    format: 'hermes',
    text: '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}',
    content: '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}',
    calls: [],
  },
  {
    name: 'thinking with tool-call syntax inside, then a call (Qwen3)',
    format: 'hermes',
    text: '<think>\nThe user wants weather. <tool_call>{"name": "search"}</tool_call>\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    reasoning: '\nThe user wants weather. <tool_call>{"name": "search"}</tool_call>\n',
    content: '\n\n',
    calls: [['get_weather', '{"city": "Paris"}']],
  },
  {
    name: 'a marker inside a JSON string does not end the block',
    format: 'hermes',
    text: '<tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": "</tool_call><tool_call>\\"}"}}</tool_call>',
    content: '',
    calls: [['write_file', '{"path": "a.txt", "content": "</tool_call><tool_call>\\"}"}']],
  },
  {
    name: "the model's own argument text survives",
    format: 'hermes',
    text: '<tool_call>{"name":"add","arguments":{"b":6.02e23,  "a":12345678901234567890123,"n":"caf\\u00e9 \\ud83d\\ude00"}}</tool_call>',
    content: '',
    calls: [['add', '{"b":6.02e23,  "a":12345678901234567890123,"n":"caf\\u00e9 \\ud83d\\ude00"}']],
  },
  {
    name: 'an undeclared tool is not a call',
    format: 'hermes',
    text: 'Let me: <tool_call>{"name": "delete_everything", "arguments": {"x": "</tool_call>"}}</tool_call> done',
    content: 'Let me: <tool_call>{"name": "delete_everything", "arguments": {"x": "</tool_call>"}}</tool_call> done',
    calls: [],
  },
  {
    name: 'arguments before the name',
    format: 'hermes',
    text: '<tool_call>{"arguments": {"name": "John"}, "name": "get_age"}</tool_call>',
    content: '',
    calls: [['get_age', '{"name": "John"}']],
  },
  {
    name: 'invalid after the call started stays content',
    format: 'hermes',
    text: 'x<tool_call>{"name": "search", "arguments": {"q": "abc"} oops}</tool_call> tail',
    content: 'x<tool_call>{"name": "search", "arguments": {"q": "abc"} oops}</tool_call> tail',
    calls: [],
  },
  {
    name: 'an unknown key makes the object not a call',
    format: 'hermes',
    text: '<tool_call>{"name": "search", "arguments": {}, "extra": 1}</tool_call>',
    content: '<tool_call>{"name": "search", "arguments": {}, "extra": 1}</tool_call>',
    calls: [],
  },
  {
    name: 'output that began inside reasoning',
    format: 'hermes',
    startsInReasoning: true,
    text: 'The user asks.</think>\n\nAnswer <tool_call>{"name": "search", "arguments": {"q": "a"}}</tool_call>',
    reasoning: 'The user asks.',
    content: '\n\nAnswer ',
    calls: [['search', '{"q": "a"}']],
  },
  { name: 'unclosed thinking', format: 'hermes', text: '<think>still thinking <tool_call>', reasoning: 'still thinking <tool_call>', content: '', calls: [] },
  { name: 'partial markers in prose', format: 'hermes', text: 'a < b, <tool and <tool_call', content: 'a < b, <tool and <tool_call', calls: [] },
  { name: 'the marker in prose', format: 'hermes', text: 'Use <tool_call> tags like this.', content: 'Use <tool_call> tags like this.', calls: [] },
  {
    name: 'string-encoded arguments are not a call',
    format: 'hermes',
    text: '<tool_call>{"name": "search", "arguments": "{\\"q\\": \\"x\\"}"}</tool_call>',
    content: '<tool_call>{"name": "search", "arguments": "{\\"q\\": \\"x\\"}"}</tool_call>',
    calls: [],
  },
  {
    name: 'multibyte text and arguments',
    format: 'hermes',
    text: 'Olá 😀 <tool_call>{"name": "search", "arguments": {"q": "naïve 😀 日本"}}</tool_call> ✓',
    content: 'Olá 😀  ✓',
    calls: [['search', '{"q": "naïve 😀 日本"}']],
  },
  {
    name: 'deep nesting',
    format: 'hermes',
    text: `<tool_call>{"name": "complexTool", "arguments": {"a": ${'['.repeat(200)}1${']'.repeat(200)}}}</tool_call>`,
    content: '',
    calls: [['complexTool', `{"a": ${'['.repeat(200)}1${']'.repeat(200)}}`]],
  },

  // ---- mistral ----
  {
    name: 'list form',
    format: 'mistral',
    text: '[TOOL_CALLS][{"name": "add", "arguments":{"a": 3.5, "b": 4}}]',
    content: '',
    calls: [['add', '{"a": 3.5, "b": 4}']],
  },
  {
    name: 'list form after a space',
    format: 'mistral',
    text: '[TOOL_CALLS] [{"name": "get_current_weather", "arguments":{"city": "San Francisco", "state": "CA", "unit": "celsius"}}]',
    content: '',
    calls: [['get_current_weather', '{"city": "San Francisco", "state": "CA", "unit": "celsius"}']],
  },
  {
    name: 'list form, arguments before the name',
    format: 'mistral',
    text: '[TOOL_CALLS] [{"arguments":{"name": "John Doe"}, "name": "get_age"}]',
    content: '',
    calls: [['get_age', '{"name": "John Doe"}']],
  },
  {
    name: 'list form, two calls',
    format: 'mistral',
    text: '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 3.5, "b": 4}}, {"name": "get_current_weather", "arguments":{"city": "San Francisco", "state": "CA", "unit": "celsius"}}]',
    content: '',
    calls: [['add', '{"a": 3.5, "b": 4}'], ['get_current_weather', '{"city": "San Francisco", "state": "CA", "unit": "celsius"}']],
  },
  {
    name: 'content before the list',
    format: 'mistral',
    text: 'Hello[TOOL_CALLS] [{"name": "add", "arguments":{"a": 1, "b": 2}}]',
    content: 'Hello',
    calls: [['add', '{"a": 1, "b": 2}']],
  },
  {
    name: 'content after the list',
    format: 'mistral',
    text: '[TOOL_CALLS] [{"name": "get_current_weather", "arguments":{"city": "Dallas", "state": "TX", "unit": "fahrenheit"}}]\nextra trailing data',
    content: '\nextra trailing data',
    calls: [['get_current_weather', '{"city": "Dallas", "state": "TX", "unit": "fahrenheit"}']],
  },
  { name: '[ARGS] form', format: 'mistral', text: '[TOOL_CALLS]add[ARGS]{"a": 3.5, "b": 4}', content: '', calls: [['add', '{"a": 3.5, "b": 4}']] },
  {
    name: '[ARGS] form, two calls',
    format: 'mistral',
    text: '[TOOL_CALLS]add[ARGS]{"a": 3.5, "b": 4}[TOOL_CALLS]add[ARGS]{"a": 3, "b": 6}',
    content: '',
    calls: [['add', '{"a": 3.5, "b": 4}'], ['add', '{"a": 3, "b": 6}']],
  },
  {
    name: '[CALL_ID] form',
    format: 'mistral',
    text: 'Checking.[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Paris"}',
    content: 'Checking.',
    calls: [['get_weather', '{"city": "Paris"}']],
  },
  { name: 'not a call after the marker', format: 'mistral', text: '[TOOL_CALLS] not json at all', content: '[TOOL_CALLS] not json at all', calls: [] },
  {
    name: '[ARGS] form, undeclared tool',
    format: 'mistral',
    text: '[TOOL_CALLS]rm_rf[ARGS]{"path": "[TOOL_CALLS]"} ok',
    content: '[TOOL_CALLS]rm_rf[ARGS]{"path": "[TOOL_CALLS]"} ok',
    calls: [],
  },
  { name: '[ARGS] form, invalid JSON', format: 'mistral', text: '[TOOL_CALLS]add[ARGS]{"a": 1,}', content: '[TOOL_CALLS]add[ARGS]{"a": 1,}', calls: [] },
  {
    name: 'list form, an undeclared element',
    format: 'mistral',
    text: '[TOOL_CALLS][{"name": "nope", "arguments": {}}, {"name": "add", "arguments": {"a": 1}}]',
    content: '[TOOL_CALLS][{"name": "nope", "arguments": {}}',
    calls: [['add', '{"a": 1}']],
  },

  // ---- llama3_json ----
  {
    name: 'bare JSON with parameters',
    format: 'llama3_json',
    text: '{"name": "searchTool", "parameters": {"query": "test query", "limit": 10}}',
    content: '',
    calls: [['searchTool', '{"query": "test query", "limit": 10}']],
  },
  {
    name: '"arguments" instead of "parameters"',
    format: 'llama3_json',
    text: '{"name": "searchTool", "arguments": {"query": "test"}}',
    content: '',
    calls: [['searchTool', '{"query": "test"}']],
  },
  {
    name: 'three calls separated by semicolons',
    format: 'llama3_json',
    text: '{"name": "searchTool", "parameters": {"query": "test1"}}; {"name": "getOpenIncidentsTool", "parameters": {}}; {"name": "searchTool", "parameters": {"query": "test2"}}',
    content: '  ',
    calls: [['searchTool', '{"query": "test1"}'], ['getOpenIncidentsTool', '{}'], ['searchTool', '{"query": "test2"}']],
  },
  {
    name: 'separators: bare semicolon and newline',
    format: 'llama3_json',
    text: '{"name": "searchTool", "parameters": {"query": "a"}};{"name": "searchTool", "parameters": {"query": "b"}}\n{"name": "getOpenIncidentsTool", "parameters": {}}',
    content: '\n',
    calls: [['searchTool', '{"query": "a"}'], ['searchTool', '{"query": "b"}'], ['getOpenIncidentsTool', '{}']],
  },
  {
    name: 'after <|python_tag|>',
    format: 'llama3_json',
    text: 'Let me look.<|python_tag|>{"name": "searchTool", "parameters": {"query": "x"}}',
    content: 'Let me look.',
    calls: [['searchTool', '{"query": "x"}']],
  },
  {
    name: 'JSON after prose is content',
    format: 'llama3_json',
    text: 'Here is the result: {"name": "getOpenIncidentsTool", "parameters": {}} Would you like to know more?',
    content: 'Here is the result: {"name": "getOpenIncidentsTool", "parameters": {}} Would you like to know more?',
    calls: [],
  },
  {
    name: 'invalid JSON stays content',
    format: 'llama3_json',
    text: '{"name": "searchTool", "parameters": {invalid json}',
    content: '{"name": "searchTool", "parameters": {invalid json}',
    calls: [],
  },
  {
    name: 'invalid after the call started',
    format: 'llama3_json',
    text: '{"name": "searchTool", "parameters": {"query": 1} x} {"name": "searchTool", "parameters": {}}',
    content: '{"name": "searchTool", "parameters": {"query": 1} x} {"name": "searchTool", "parameters": {}}',
    calls: [],
  },
  { name: 'missing name', format: 'llama3_json', text: '{"parameters": {}}', content: '{"parameters": {}}', calls: [] },
  { name: 'missing parameters', format: 'llama3_json', text: '{"name": "getOpenIncidentsTool"}', content: '{"name": "getOpenIncidentsTool"}', calls: [] },
  {
    name: 'nested parameters',
    format: 'llama3_json',
    text: '{"name": "complexTool", "parameters": {"level1": {"level2": {"level3": {"level4": {"value": "deep"}}}}}}',
    content: '',
    calls: [['complexTool', '{"level1": {"level2": {"level3": {"level4": {"value": "deep"}}}}}']],
  },
  {
    name: 'braces in trailing prose',
    format: 'llama3_json',
    text: '{"name": "searchTool", "parameters": {"query": "test"}} I used {searchTool} for this. The arguments were {"query": "test"}',
    content: ' I used {searchTool} for this. The arguments were {"query": "test"}',
    calls: [['searchTool', '{"query": "test"}']],
  },
  {
    name: 'quotes and brackets inside strings',
    format: 'llama3_json',
    text: '{"name": "searchTool", "parameters": {"query": "test {value} [complex] He said \\"Hello {world}\\""}}',
    content: '',
    calls: [['searchTool', '{"query": "test {value} [complex] He said \\"Hello {world}\\""}']],
  },
  {
    name: '"type": "function" and thinking first',
    format: 'llama3_json',
    text: '<think>plan</think>\n{"type": "function", "name": "searchTool", "parameters": {"query": "a"}}',
    reasoning: 'plan',
    content: '\n',
    calls: [['searchTool', '{"query": "a"}']],
  },

  // ---- qwen3_coder ----
  { name: 'single call', format: 'qwen3_coder', text: DALLAS, content: '', calls: [['get_current_weather', DALLAS_ARGS]] },
  {
    name: 'content before a call',
    format: 'qwen3_coder',
    text: `Sure! Let me check the weather for you.${DALLAS}`,
    content: 'Sure! Let me check the weather for you.',
    calls: [['get_current_weather', DALLAS_ARGS]],
  },
  {
    name: 'multi-line object value',
    format: 'qwen3_coder',
    text: q3('calculate_area', [['shape', 'rectangle'], ['dimensions', '{"width": 10, \n "height": 20}'], ['precision', '2']]),
    content: '',
    calls: [['calculate_area', '{"shape":"rectangle","dimensions":{"width": 10, \n "height": 20},"precision":2}']],
  },
  {
    name: 'parallel calls',
    format: 'qwen3_coder',
    text: `${DALLAS}\n${q3('get_current_weather', [['city', 'Orlando'], ['state', 'FL'], ['unit', 'celsius']])}`,
    content: '\n',
    calls: [['get_current_weather', DALLAS_ARGS], ['get_current_weather', '{"city":"Orlando","state":"FL","unit":"celsius"}']],
  },
  {
    name: 'typed values',
    format: 'qwen3_coder',
    text: q3('test_types', [['int_param', '42'], ['float_param', '3.14'], ['bool_param', 'true'], ['str_param', 'hello world'], ['obj_param', '{"key": "value"}'], ['arr', '["a", "b"]']]),
    content: '',
    calls: [['test_types', '{"int_param":42,"float_param":3.14,"bool_param":true,"str_param":"hello world","obj_param":{"key": "value"},"arr":["a", "b"]}']],
  },
  {
    name: 'anyOf and nullable types',
    format: 'qwen3_coder',
    text: q3('test_types', [['anyof_int', '5'], ['type_as_array', 'null'], ['multi_non_null', 'some text'], ['num', '6.02e23']]),
    content: '',
    calls: [['test_types', '{"anyof_int":5,"type_as_array":null,"multi_non_null":"some text","num":6.02e23}']],
  },
  {
    name: 'strings stay strings; Python booleans; big integers; untypable text',
    format: 'qwen3_coder',
    text: q3('test_types', [['str_param', '42'], ['code', '{"a": 1}'], ['bool_param', 'True'], ['int_param', '12345678901234567890'], ['anyof_int', 'many'], ['unknown', 'x']]),
    content: '',
    calls: [['test_types', '{"str_param":"42","code":"{\\"a\\": 1}","bool_param":true,"int_param":12345678901234567890,"anyof_int":"many","unknown":"x"}']],
  },
  {
    name: '</parameter> inside code',
    format: 'qwen3_coder',
    text: q3('write_file', [['path', 'a.py'], ['content', 'x = "</parameter>"\ny = "</parameter>\n\n  z"\n</parameter>']]),
    content: '',
    calls: [['write_file', '{"path":"a.py","content":"x = \\"</parameter>\\"\\ny = \\"</parameter>\\n\\n  z\\"\\n</parameter>"}']],
  },
  {
    name: 'one framing newline each side; quotes, backslashes, emoji',
    format: 'qwen3_coder',
    text: '<tool_call>\n<function=write_file>\n<parameter=content>\n\n He said "hi" \\ 😀\t<b>\n\n</parameter>\n</function>\n</tool_call>',
    content: '',
    calls: [['write_file', '{"content":"\\n He said \\"hi\\" \\\\ 😀\\t<b>\\n"}']],
  },
  {
    name: 'no parameters',
    format: 'qwen3_coder',
    text: '<tool_call>\n<function=getOpenIncidentsTool>\n</function>\n</tool_call>',
    content: '',
    calls: [['getOpenIncidentsTool', '{}']],
  },
  {
    name: 'closer missing at the end of the output',
    format: 'qwen3_coder',
    text: '<tool_call>\n<function=search>\n<parameter=q>\nhello\n</parameter>\n</function>',
    content: '',
    calls: [['search', '{"q":"hello"}']],
  },
  {
    name: 'truncated inside a value',
    format: 'qwen3_coder',
    text: 'a<tool_call>\n<function=search>\n<parameter=q>\nhal',
    content: 'a<tool_call>\n<function=search>\n<parameter=q>\nhal',
    calls: [],
  },
  {
    name: 'undeclared function',
    format: 'qwen3_coder',
    text: '<tool_call>\n<function=rm>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>ok',
    content: '<tool_call>\n<function=rm>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>ok',
    calls: [],
  },
  {
    name: 'object and array values right after the `>`',
    format: 'qwen3_coder',
    text: q3call('test_types', inline('obj_param', '{"path": "a.txt", "lines": [1, 2]}'), inline('arr', '[{"x": "</parameter>"}, "]", -0.5e-3]')),
    content: '',
    calls: [['test_types', '{"obj_param":{"path": "a.txt", "lines": [1, 2]},"arr":[{"x": "</parameter>"}, "]", -0.5e-3]}']],
  },
  {
    name: 'object and array values on their own lines, the spaces around them trimmed; a union with null',
    format: 'qwen3_coder',
    text: q3call('test_types', lines('obj_param', '  {"a": {"b": [true, null, "}"]}}\t '), lines('arr', '[\n  "x",\n  2\n]'), lines('opt_arr', '[["a"], {}]')),
    content: '',
    calls: [['test_types', '{"obj_param":{"a": {"b": [true, null, "}"]}},"arr":[\n  "x",\n  2\n],"opt_arr":[["a"], {}]}']],
  },
  {
    name: 'Unicode spaces around an object value; a union with null',
    format: 'qwen3_coder',
    text: q3call('test_types', inline('obj_param', '\u00a0{"a": "é😀"}\u3000'), lines('opt_obj', '{"k": [1]}')),
    content: '',
    calls: [['test_types', '{"obj_param":{"a": "é😀"},"opt_obj":{"k": [1]}}']],
  },
  {
    name: 'empty and null containers',
    format: 'qwen3_coder',
    text: q3call('test_types', inline('obj_param', '{}'), lines('arr', ' [ ] '), lines('opt_obj', 'None'), inline('opt_arr', 'null')),
    content: '',
    calls: [['test_types', '{"obj_param":{},"arr":[ ],"opt_obj":null,"opt_arr":null}']],
  },
  {
    name: 'Python literals and containers of the other kind stay strings',
    format: 'qwen3_coder',
    text: q3call('test_types', lines('obj_param', "{'a': 1}"), inline('arr', '[True, None]'), lines('opt_arr', '{"a": 1}'), inline('opt_obj', '[1]')),
    content: '',
    calls: [['test_types', '{"obj_param":"{\'a\': 1}","arr":"[True, None]","opt_arr":"{\\"a\\": 1}","opt_obj":"[1]"}']],
  },
  {
    name: 'an object value that stops being JSON after it began stays a string; text and a call follow',
    format: 'qwen3_coder',
    text: `A${q3call('test_types', lines('obj_param', '{"a": True}'), inline('arr', '[1]'))}\nB\n${q3call('test_types', inline('arr', '[1, 2]'))}C`,
    content: 'A\nB\nC',
    calls: [
      ['test_types', '{"obj_param":"{\\"a\\": True}","arr":[1]}'],
      ['test_types', '{"arr":[1, 2]}'],
    ],
  },
  {
    name: 'text after a whole JSON array makes it a string, in a second call',
    format: 'qwen3_coder',
    text: `${q3call('test_types', inline('arr', '[1, 2]'))}${q3call('test_types', inline('arr', '[1, 2]x'))}`,
    content: '',
    calls: [
      ['test_types', '{"arr":[1, 2]}'],
      ['test_types', '{"arr":"[1, 2]x"}'],
    ],
  },
  {
    name: 'an object value that ends before it is whole stays a string',
    format: 'qwen3_coder',
    text: q3call('test_types', lines('obj_param', '{"a": [1'), lines('arr', '[2]')),
    content: '',
    calls: [['test_types', '{"obj_param":"{\\"a\\": [1","arr":[2]}']],
  },
  {
    name: 'a raw newline inside a JSON string is not JSON',
    format: 'qwen3_coder',
    text: q3call('test_types', lines('obj_param', '{"code": "a\nb"}')),
    content: '',
    calls: [['test_types', '{"obj_param":"{\\"code\\": \\"a\\nb\\"}"}']],
  },
  {
    name: 'a structural </parameter> inside a JSON string ends the value there',
    format: 'qwen3_coder',
    text: '<tool_call>\n<function=test_types>\n<parameter=obj_param>\n{"a": "x</parameter>\n<parameter=arr>\n[2]\n</parameter>\n</function>\n</tool_call>',
    content: '',
    calls: [['test_types', '{"obj_param":"{\\"a\\": \\"x","arr":[2]}']],
  },
  { name: 'not XML after the marker', format: 'qwen3_coder', text: '<tool_call>\nhello\n</tool_call>', content: '<tool_call>\nhello\n</tool_call>', calls: [] },
  {
    name: 'thinking first',
    format: 'qwen3_coder',
    text: '<think>use search</think>\n\n<tool_call>\n<function=search>\n<parameter=q>\na < b && c <d> e\n</parameter>\n</function>\n</tool_call>',
    reasoning: 'use search',
    content: '\n\n',
    calls: [['search', '{"q":"a < b && c <d> e"}']],
  },
];
