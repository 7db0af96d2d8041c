// The acceptance test of exact replay: the 10-turn agent conversation through runtime.chat() on
// small models with a real vocabulary and a real template (test/fixtures/chat/), the model forced
// to a script, the client re-serializing its history every turn. With replay on, every turn after
// the first reuses the whole previous prompt and everything the model generated: the first
// prompt token not in the KV cache is the previous turn's end-of-turn token, which the model
// sampled but never fed back. With replay off, the same conversation misses every turn.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Runtime, type ChatMessage, type ToolCallFormat } from '../../src/index.js';
import type { CacheExplanation } from '../../src/runtime/explain-cache.js';
import { AGENT_TOOLS, AGENT_TURNS, runAgentConversation, type AgentTurn } from '../fixtures/chat/agent-conversation.js';
import { sharedTemplate, writeTinyChatModel, type ChatFamily } from '../fixtures/chat/tiny-chat-model.js';

interface Scenario {
  name: string;
  family: ChatFamily;
  template: string;
  format: ToolCallFormat;
  thinking: boolean;
  eog: string;
}

const SCENARIOS: Scenario[] = [
  { name: 'Qwen3, hermes, with thinking', family: 'qwen3', template: 'qwen3.jinja', format: 'hermes', thinking: true, eog: '<|im_end|>' },
  { name: 'Qwen3-Coder, qwen3_coder', family: 'qwen3', template: 'qwen3-coder.jinja', format: 'qwen3_coder', thinking: false, eog: '<|im_end|>' },
  { name: 'Llama 3.2, llama3_json', family: 'llama3', template: 'llama3.2.jinja', format: 'llama3_json', thinking: false, eog: '<|eot_id|>' },
  { name: 'Llama 3.1, llama3_json', family: 'llama3', template: 'llama3.1.jinja', format: 'llama3_json', thinking: false, eog: '<|eot_id|>' },
];

const indexesOf = (messages: ChatMessage[], pick: (m: ChatMessage) => boolean) =>
  messages.flatMap((m, i) => (pick(m) ? [i] : []));

describe.each(SCENARIOS)('$name', (s) => {
  let on: Runtime;
  let off: Runtime;
  beforeAll(async () => {
    const model = writeTinyChatModel(s.family, sharedTemplate(s.template));
    on = await Runtime.load({ model, threads: 1, contextSize: 4096 });
    off = await Runtime.load({ model, threads: 1, contextSize: 4096, replay: false });
  });
  afterAll(async () => {
    await on?.close();
    await off?.close();
  });

  let withReplay: AgentTurn[];

  it('replay on: every turn after the first reuses the previous prompt and generation', async () => {
    const why: CacheExplanation[] = [];
    withReplay = await runAgentConversation(on, {
      format: s.format, thinking: s.thinking, eog: s.eog, replay: true,
      beforeTurn: (t, messages) => { why[t] = on.explainCache(messages, { tools: AGENT_TOOLS }); },
    });
    expect(withReplay).toHaveLength(10);
    expect(withReplay[0]!.cachedTokens).toBe(0);
    for (let t = 1; t < withReplay.length; t++) {
      const prev = withReplay[t - 1]!;
      const cur = withReplay[t]!;
      const reused = prev.promptTokens + prev.completionTokens;
      expect(cur.cachedTokens, `turn ${t + 1}`).toBe(reused);
      expect(cur.prefillTokens).toBe(cur.promptTokens - reused);
      const d = why[t]!.divergence!;
      expect(why[t]!.cachedTokens).toBe(reused);
      expect(d.tokenIndex).toBe(reused);
      // The first token not in the cache closes the previous assistant turn.
      expect(d.promptToken.text).toBe(s.eog);
      expect(d.cachedToken).toBeNull();
      expect(d.messageIndex).toBe(Math.max(...indexesOf(cur.messages, (m) => m.role === 'assistant')));
      expect(why[t]!.replayed).toEqual(indexesOf(cur.messages, (m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0));
    }
  });

  it('returns the model\'s own argument text and finishes each turn as the script says', () => {
    withReplay.forEach((turn, t) => {
      const script = AGENT_TURNS[t]!;
      if (script.answer !== undefined) {
        expect(turn.result.finishReason).toBe('stop');
        expect(turn.result.message.content).toContain(script.answer);
        return;
      }
      expect(turn.result.finishReason).toBe('tool_calls');
      const calls = s.format === 'llama3_json' ? script.calls.slice(0, 1) : script.calls;
      expect(turn.result.message.toolCalls!.map((c) => c.function.name)).toEqual(calls.map((c) => c.name));
      if (s.format !== 'qwen3_coder') expect(turn.result.message.toolCalls!.map((c) => c.function.arguments)).toEqual(calls.map((c) => c.args));
      if (s.thinking) expect(turn.result.message.reasoning?.trim()).toBe(script.thought);
    });
  });

  it('replay off: the same conversation misses on every turn', async () => {
    const why: CacheExplanation[] = [];
    const turns = await runAgentConversation(off, {
      format: s.format, thinking: s.thinking, eog: s.eog, replay: false,
      beforeTurn: (t, messages) => { why[t] = off.explainCache(messages, { tools: AGENT_TOOLS }); },
    });
    for (let t = 1; t < turns.length; t++) {
      const prev = turns[t - 1]!;
      const cur = turns[t]!;
      expect(cur.cachedTokens, `turn ${t + 1}`).toBeLessThan(prev.promptTokens + prev.completionTokens);
      expect(why[t]!.divergence!.role).toBe('assistant');
      expect(why[t]!.replayed).toEqual([]);
    }
    const prefilled = (ts: AgentTurn[]) => ts.reduce((n, x) => n + x.prefillTokens, 0);
    expect(prefilled(turns)).toBeGreaterThan(prefilled(withReplay));
  });
});
