// Hostile chat templates: each would hang the process, kill V8 or take gigabytes without the
// render limits; with them each stops with a TemplateLimitError naming the limit, at once or
// within the render's time limit, and the process goes on.
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../../src/chat/chat-template.js';
import { ChatTemplateSyntaxError } from '../../../src/chat/errors.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_TEMPLATE_MS, renderTimeLimit, TemplateLimitError } from '../../../src/chat/template-limits.js';
import { SHARED } from '../../helpers/paths.js';

const HI = { messages: [{ role: 'user', content: 'hi' }], addGenerationPrompt: true };
/** A string of 2^n "a"s, built by doubling. */
const doubled = (n: number) => `{% set ns = namespace(s='a') %}{% for i in range(${n}) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`;

function limitOf(source: string, maxRenderMs = 300): string {
  const t = new ChatTemplate(source, { maxRenderMs });
  try {
    t.render(HI);
  } catch (e) {
    expect(e).toBeInstanceOf(TemplateLimitError);
    expect((e as TemplateLimitError).status).toBe(500);
    return (e as TemplateLimitError).limit;
  }
  throw new Error('the template rendered');
}

describe('chat template render limits', () => {
  it.each([
    ['nested range() loops', '{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}', 'MAX_TEMPLATE_MS'],
    ['a loop over a huge range', '{% for i in range(1000000000) %}{% endfor %}', 'MAX_TEMPLATE_ITEMS'],
    ['replace on a 2^26-character string', `${doubled(26)}{{ ns.s.replace('a', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb') }}`, 'MAX_TEMPLATE_CHARS'],
    ['the replace filter inserting between every character', `${doubled(20)}{{ ns.s|replace('', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx') }}`, 'MAX_TEMPLATE_CHARS'],
    ['a 2^28-character render', `${doubled(28)}{{ ns.s }}`, 'MAX_TEMPLATE_CHARS'],
    ['split into millions of pieces', `${doubled(24)}{{ ns.s.split('a')|length }}`, 'MAX_TEMPLATE_ITEMS'],
    ['a string as a list of millions of characters', `${doubled(24)}{{ ns.s|list|length }}`, 'MAX_TEMPLATE_ITEMS'],
    ['indent by a million', "{{ 'x\\ny'|indent(1000000) }}", 'MAX_TEMPLATE_INDENT'],
    ['tojson with a huge indent', "{{ messages|tojson(indent=100000000) }}", 'MAX_TEMPLATE_INDENT'],
    ['join of many copies of a long string', `${doubled(20)}{% set l = namespace(v=[]) %}{% for i in range(100) %}{% set l.v = l.v + [ns.s] %}{% endfor %}{{ l.v|join('') }}`, 'MAX_TEMPLATE_CHARS'],
  ])('stops %s', (_, source, limit) => {
    expect(limitOf(source)).toBe(limit);
  });

  it('stops a loop that runs for ever within the render time limit', () => {
    const t0 = performance.now();
    expect(limitOf('{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}', 200)).toBe('MAX_TEMPLATE_MS');
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('gives a render time that follows the conversation, up to MAX_TEMPLATE_MS', () => {
    expect(renderTimeLimit(3)).toBeLessThan(110);
    expect(renderTimeLimit(1000)).toBeGreaterThan(renderTimeLimit(100));
    expect(renderTimeLimit(100_000)).toBe(MAX_TEMPLATE_MS);
  });

  it.each(['qwen3', 'llama3.1', 'hermes', 'mistral-small-3', 'qwen3-coder'])('renders 5,000 messages with the shipped %s template within its limits', (name) => {
    const t = new ChatTemplate(readFileSync(join(SHARED, 'templates', `${name}.jinja`), 'utf8'), { bosToken: '<s>', eosToken: '</s>' });
    const messages = Array.from({ length: 5000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}` }));
    expect(t.render({ messages, addGenerationPrompt: true })).toContain('message 4999');
  });

  it('renders real templates as before', () => {
    const t = new ChatTemplate("{% for m in messages %}<|{{ m.role }}|>{{ m.content|replace('a', 'b')|indent(2) }}{% endfor %}{{ ['x', 'y']|join(', ') }}");
    expect(t.render(HI)).toBe('<|user|>hi' + 'x, y');
  });

  it('finds at load a template that cannot render a short conversation within its limits', () => {
    const t = new ChatTemplate('{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}', { maxRenderMs: 100 });
    expect(() => t.probe()).toThrow(ChatTemplateSyntaxError);
    // A template that refuses the probe's conversation is not at fault.
    expect(() => new ChatTemplate("{{ raise_exception('system message first') }}").probe()).not.toThrow();
    // One that only explodes on longer conversations passes the probe.
    const late = new ChatTemplate('{% if messages|length > 3 %}{% for i in range(1000000000) %}{% endfor %}{% endif %}ok', { maxRenderMs: 100 });
    expect(() => late.probe()).not.toThrow();
    expect(() => late.render({ ...HI, messages: Array.from({ length: 4 }, () => HI.messages[0]!) })).toThrow(TemplateLimitError);
  });
});
