// The render thread: long conversations, and every conversation of a template that went past a
// limit, render on a worker thread (the compiled dist/ build: `npm run build` first), giving the
// same prompt as the main thread's render while the event loop keeps turning; a template that
// exhausts the worker's time or heap fails its render, and the next render gets a fresh worker.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildPrompt, buildPromptAsync, type BuildPromptInput } from '../../../src/chat/build-prompt.js';
import { ChatTemplate, OFF_THREAD_MESSAGES } from '../../../src/chat/chat-template.js';
import type { ChatMessage } from '../../../src/chat/messages.js';
import { PromptTokenizer } from '../../../src/chat/prompt-tokenizer.js';
import { renderThreadAvailable } from '../../../src/chat/render-thread.js';
import { MAX_TEMPLATE_MS, TemplateLimitError } from '../../../src/chat/template-limits.js';
import { templateQuirks, toTemplateMessages } from '../../../src/chat/template-messages.js';
import { chatTokenizer, sharedTemplate } from '../../fixtures/chat/tiny-chat-model.js';
import { repoRoot } from '../../helpers/paths.js';
import { turnsDuring } from '../../helpers/event-loop.js';

const tokenizer = chatTokenizer('qwen3');
const prompts = new PromptTokenizer(tokenizer);

function input(source: string, messages: ChatMessage[], template = new ChatTemplate(source)): BuildPromptInput {
  return {
    template, prompts, messages: toTemplateMessages(messages, templateQuirks(source)), tools: undefined,
    variables: {}, now: new Date(2025, 0, 1), replay: null,
  };
}

const conversation = (n: number): ChatMessage[] =>
  Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i} <|im_end|> with a control text` }) as ChatMessage);

describe.runIf(renderThreadAvailable())('the render thread', () => {
  it('keeps the process alive while it renders, and not after', () => {
    // A process that awaits an off-thread render gets its answer, then exits by itself.
    const script = `import { ChatTemplate } from ${JSON.stringify(pathToFileURL(join(repoRoot, 'dist/src/chat/chat-template.js')).href)};
      const t = new ChatTemplate('{% for m in messages %}{{ m.content }}{% endfor %}');
      console.log(JSON.stringify(await t.renderOffThread([{ messages: [{ role: 'user', content: 'hi' }], addGenerationPrompt: true }])));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('["hi"]');
  });

  const qwen3 = sharedTemplate('qwen3.jinja');

  it('renders a long conversation off the main thread to the same prompt', async () => {
    const messages = conversation(3000);
    const template = new ChatTemplate(qwen3);
    expect(template.rendersOffThread(messages.length)).toBe(true);
    expect(template.rendersOffThread(OFF_THREAD_MESSAGES)).toBe(false);
    const { value: off, turns } = await turnsDuring(buildPromptAsync(input(qwen3, messages, template), 1 << 30));
    const on = buildPrompt(input(qwen3, messages));
    expect(off.tokens).toEqual(on.tokens);
    expect(off.text).toBe(on.text);
    expect(off.turnEnd()).toEqual(on.turnEnd());
    expect(off.turnEnd()).not.toBeNull();
    // Rendering 3,000 messages takes the interpreter tens of milliseconds; the loop went on meanwhile.
    expect(turns).toBeGreaterThan(5);
  });

  it('moves a template to the thread once it went past a limit, and keeps the main thread free', async () => {
    const hostile = "{% if messages|length > 2 %}{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}{% endif %}{{ messages[-1].content }}";
    const template = new ChatTemplate(hostile);
    const three = conversation(3);
    expect(template.rendersOffThread(3)).toBe(false);
    await expect(buildPromptAsync(input(hostile, three, template), 1 << 30)).rejects.toThrow(TemplateLimitError);
    expect(template.rendersOffThread(3)).toBe(true);
    const { turns } = await turnsDuring(buildPromptAsync(input(hostile, three, template), 1 << 30).catch((e: unknown) => e));
    expect(turns).toBeGreaterThan(5);
    await expect(buildPromptAsync(input(hostile, three, template), 1 << 30)).rejects.toMatchObject({ limit: 'MAX_TEMPLATE_MS' });
    // Short conversations the template handles still render (on the thread now).
    expect((await buildPromptAsync(input(hostile, conversation(1), template), 1 << 30)).text).toContain('message 0');
  });

  it('moves a render that holds the event loop past MAIN_THREAD_RENDER_MS to the thread, where it finishes', async () => {
    // Within its (raised) time limit, but hundreds of milliseconds of interpreter work.
    const slow = '{% for i in range(200) %}{% for j in range(300) %}{% endfor %}{% endfor %}{{ messages[-1].content }}';
    const template = new ChatTemplate(slow, { maxRenderMs: MAX_TEMPLATE_MS });
    expect(template.rendersOffThread(1)).toBe(false);
    const { value, turns } = await turnsDuring(buildPromptAsync(input(slow, conversation(1), template), 1 << 30));
    expect(value.text).toContain('message 0');
    expect(template.movedOffThread).toBe(true);
    expect(template.rendersOffThread(1)).toBe(true);
    // The main thread gave up after MAIN_THREAD_RENDER_MS; the loop turned while the thread rendered.
    expect(turns).toBeGreaterThan(5);
    // Where no thread can take it (the synchronous path), the same render runs to the end here.
    expect(buildPrompt(input(slow, conversation(1), new ChatTemplate(slow, { maxRenderMs: MAX_TEMPLATE_MS }))).text).toBe(value.text);
  });

  it('fails a render that exhausts the worker\'s heap, and renders with a fresh worker after', async () => {
    // Each item a new flat string of 2^22 characters: gigabytes within the time a long conversation gets.
    const greedy = "{% set ns = namespace(s='a', l=[]) %}{% for i in range(22) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{% for m in messages %}{% set ns.l = ns.l + [(ns.s ~ loop.index)|upper] %}{% endfor %}{{ ns.l|length }}";
    const template = new ChatTemplate(greedy);
    const err = await buildPromptAsync(input(greedy, conversation(8000), template), 1 << 30).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TemplateLimitError);
    // On a machine too loaded to build a gigabyte within the render's time, the time limit comes first.
    expect(["the render thread's memory", 'MAX_TEMPLATE_MS']).toContain((err as TemplateLimitError).limit);
    const ok = await buildPromptAsync(input(qwen3, conversation(100)), 1 << 30);
    expect(ok.text).toContain('message 99');
  });
});
