// OpenAI messages to template messages: the quirks, and typed errors for hostile requests.
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../../src/chat/chat-template.js';
import { ChatTemplateError, ChatTemplateSyntaxError } from '../../../src/chat/errors.js';
import { strftime } from '../../../src/chat/strftime.js';
import { sameJson } from '../../../src/chat/same-json.js';
import { MAX_JSON_DEPTH, templateQuirks, toTemplateMessages } from '../../../src/chat/template-messages.js';
import { InvalidArgumentError } from '../../../src/errors.js';

const plain = templateQuirks('{{ system }} {{ developer }} {% if x.arguments is string %}{% endif %}');
const strict = templateQuirks('{{ messages[0].role == "system" }}');

describe('toTemplateMessages', () => {
  it('applies the quirks', () => {
    const out = toTemplateMessages([
      { role: 'developer', content: [{ type: 'text', text: 'Be ' }, { type: 'text', text: 'kind.' }] },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, reasoning: 'hmm', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"b": 1, "a": [2]}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'assistant', tool_calls: [] },
    ], strict);
    expect(out).toEqual([
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', reasoning_content: 'hmm', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: { b: 1, a: [2] } } }] },
      { role: 'tool', content: 'ok', tool_call_id: 'c1', name: 'f' },
      { role: 'assistant', content: '' },
    ]);
    expect(Object.keys((out[2]!.tool_calls![0]!.function.arguments) as object)).toEqual(['b', 'a']);
  });

  it('keeps developer for templates that know it, merges system into the first user message for templates without a system role', () => {
    expect(toTemplateMessages([{ role: 'developer', content: 'x' }], plain)[0]!.role).toBe('developer');
    const noSystem = templateQuirks('{% for m in messages %}{{ m.content }}{% endfor %}');
    expect(toTemplateMessages([{ role: 'system', content: 'S' }, { role: 'user', content: 'U' }], noSystem)).toEqual([{ role: 'user', content: 'S\n\nU' }]);
  });

  it('keeps non-JSON argument text only for templates that insert strings verbatim', () => {
    const m = [{ role: 'assistant' as const, tool_calls: [{ id: 'c', type: 'function' as const, function: { name: 'f', arguments: '{oops' } }] }];
    expect(toTemplateMessages(m, plain)[0]!.tool_calls![0]!.function.arguments).toBe('{oops');
    expect(() => toTemplateMessages(m, strict)).toThrow(InvalidArgumentError);
  });

  it.each([
    ['not an array', 'hello', 'messages'],
    ['empty', [], 'messages'],
    ['a bad role', [{ role: 'wizard', content: 'x' }], 'messages[0].role'],
    ['a bad part', [{ role: 'user', content: [{ type: 'image_url', image_url: 'x' }] }], 'messages[0].content[0]'],
    ['tool calls on a user message', [{ role: 'user', content: 'x', tool_calls: [] }], 'messages[0].tool_calls'],
    ['a tool message without its call id', [{ role: 'tool', content: 'x' }], 'messages[0].tool_call_id'],
    ['a call without a name', [{ role: 'assistant', tool_calls: [{ id: 'c', function: { arguments: '{}' } }] }], 'messages[0].tool_calls[0].function.name'],
    ['arguments nested too deep', [{ role: 'assistant', tool_calls: [{ id: 'c', function: { name: 'f', arguments: '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1) } }] }], 'messages[0].tool_calls[0].function.arguments'],
  ])('refuses %s with a typed error naming the field', (_, messages, param) => {
    let err: unknown;
    try { toTemplateMessages(messages, strict); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).param).toBe(param);
    expect((err as InvalidArgumentError).status).toBe(400);
  });
});

describe('ChatTemplate', () => {
  it('renders Python semantics the JS engine lacks', () => {
    const t = new ChatTemplate('{{ true|string }} {{ x|string }} {% for i in nothing %}x{% endfor %}{{ missing|trim }}|{{ range(3)|join(",") }}');
    expect(t.render({ messages: [], addGenerationPrompt: false, variables: { x: false } })).toBe('True False |0,1,2');
  });

  it('turns raise_exception into a typed 400 and a broken template into a load error', () => {
    const t = new ChatTemplate('{{ raise_exception("roles must alternate") }}');
    expect(() => t.render({ messages: [], addGenerationPrompt: true })).toThrow(ChatTemplateError);
    try { t.render({ messages: [], addGenerationPrompt: true }); } catch (e) {
      expect((e as ChatTemplateError).raisedByTemplate).toBe(true);
      expect((e as ChatTemplateError).templateMessage).toBe('roles must alternate');
    }
    expect(() => new ChatTemplate('{% if %}')).toThrow(ChatTemplateSyntaxError);
    expect(() => new ChatTemplate('')).toThrow(ChatTemplateSyntaxError);
  });

  it('strftime_now uses the given time, formatted as Python does', () => {
    const d = new Date(2024, 6, 5, 14, 3, 9);
    expect(strftime(d, '%d %b %Y|%B %e|%a %A|%H:%M:%S %I%p|%j %y %m|%%|%Z.')).toBe('05 Jul 2024|July  5|Fri Friday|14:03:09 02PM|187 24 07|%|.');
    const t = new ChatTemplate('{{ strftime_now("%Y-%m-%d") }}');
    expect(t.render({ messages: [], addGenerationPrompt: false, now: d })).toBe('2024-07-05');
  });
});

describe('sameJson', () => {
  it('compares meaning, not text', () => {
    expect(sameJson({ a: 1, b: [1.5, { c: null }] }, { b: [1.5, { c: null }], a: 1.0 })).toBe(true);
    expect(sameJson(JSON.parse('{"x": 6.02e23}'), JSON.parse('{"x": 602000000000000000000000}'))).toBe(true);
    expect(sameJson({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameJson([1, 2], [2, 1])).toBe(false);
    expect(sameJson({ a: '1' }, { a: 1 })).toBe(false);
    expect(sameJson({ a: [] }, { a: {} })).toBe(false);
  });
});
