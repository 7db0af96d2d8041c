// Every template in ../shared/templates/, rendered by kiln (@huggingface/jinja + kiln's message
// quirks) for the conversations in test/fixtures/chat/conversations.json, against the goldens
// that scripts/render-golden-templates.py made with Python's jinja2: byte for byte, and the same
// refusals.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../../src/chat/chat-template.js';
import { ChatTemplateError } from '../../../src/chat/errors.js';
import { templateQuirks, toTemplateMessages } from '../../../src/chat/template-messages.js';
import { repoRoot, SHARED } from '../../helpers/paths.js';

interface GoldenCase { prompt?: string; error?: string; raised?: boolean }
interface Golden { template: string; sha256: string; now: string; bos_token?: string; eos_token?: string; cases: Record<string, GoldenCase> }
interface Conversation { name: string; messages: unknown[]; tools?: boolean; enable_thinking?: boolean; add_generation_prompt: boolean }

const FIXTURES = join(repoRoot, 'test', 'fixtures', 'chat');
const conversations = JSON.parse(readFileSync(join(FIXTURES, 'conversations.json'), 'utf8')) as { tools: object[]; cases: Conversation[] };
const goldens = readdirSync(join(FIXTURES, 'golden')).filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(join(FIXTURES, 'golden', f), 'utf8')) as Golden);

describe.each(goldens)('$template', (golden) => {
  const source = readFileSync(join(SHARED, 'templates', golden.template), 'utf8');
  const template = new ChatTemplate(source, { bosToken: golden.bos_token ?? null, eosToken: golden.eos_token ?? null });
  const [date, time] = golden.now.split('T') as [string, string];
  const [y, mo, d] = date.split('-').map(Number) as [number, number, number];
  const [h, mi, s] = time.split(':').map(Number) as [number, number, number];
  const now = new Date(y, mo - 1, d, h, mi, s);

  it('is the template the goldens were made from', () => {
    expect(template.hash).toBe(golden.sha256);
  });

  it.each(conversations.cases)('$name', (c) => {
    const expected = golden.cases[c.name]!;
    const render = () => template.render({
      messages: toTemplateMessages(c.messages, templateQuirks(source)),
      tools: c.tools ? conversations.tools : undefined,
      addGenerationPrompt: c.add_generation_prompt,
      variables: c.enable_thinking === undefined ? {} : { enable_thinking: c.enable_thinking },
      now,
    });
    if (expected.prompt !== undefined) {
      expect(render()).toBe(expected.prompt);
    } else {
      let caught: unknown;
      try { render(); } catch (e) { caught = e; }
      expect(caught).toBeInstanceOf(ChatTemplateError);
      if (expected.raised) expect((caught as ChatTemplateError).templateMessage).toBe(expected.error);
    }
  });
});
