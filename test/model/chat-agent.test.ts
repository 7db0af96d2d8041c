// The acceptance test of exact replay: the 10-turn agent conversation through runtime.chat() on
// small models with a real vocabulary and a real template (test/fixtures/chat/), the model forced
// to a script, the client re-serializing its history every turn. With replay on, every turn after
// the first reuses the whole previous prompt, everything the model generated, and the end of its
// turn (the end-of-turn token it sampled and the template's text after it, evaluated once the
// reply ended): the first prompt token not in the KV cache is the first token of the new
// messages. With replay off, the same conversation misses every turn. The other
// templates in ../shared/templates/ that support tools run the same conversation; Mistral Nemo
// writes call ids the model never wrote into each turn, so there only the turn up to the ids is
// replayed (the template's text wins where it says more than the model did). Where a template
// itself renders an earlier message differently once the conversation grows (Hermes closes the
// last tool result differently, Nemo moves the system prompt), the cache misses there whatever
// replay does; the test checks that it is that message and that the turns were still replayed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Runtime, type ChatMessage } from '../../src/index.js';
import type { CacheExplanation } from '../../src/runtime/explain-cache.js';
import { AGENT_TOOLS, AGENT_TURNS, runAgentConversation, type AgentTurn, type ScriptStyle } from '../fixtures/chat/agent-conversation.js';
import { sharedTemplate, writeTinyChatModel, type ChatFamily } from '../fixtures/chat/tiny-chat-model.js';

interface Scenario extends ScriptStyle {
  name: string;
  family: ChatFamily;
  template: string;
  /** What the template writes after the end-of-turn token, before the next message. */
  turnEnd: string;
  /** The first token of a tool-result message. */
  nextMessage: string;
  /** Whether each previous turn is replayed whole or only up to where the template adds to it. */
  reuse: 'whole' | 'partial';
  /** The role of the message the template itself re-renders differently on this (1-based) turn, if any. */
  templateMiss?: (turn: number) => string | null;
}

const SCENARIOS: Scenario[] = [
  { name: 'Qwen3, hermes, with thinking', family: 'qwen3', template: 'qwen3.jinja', format: 'hermes', thinking: true, eog: '<|im_end|>', turnEnd: '\n', nextMessage: '<|im_start|>', reuse: 'whole' },
  { name: 'Qwen3-Coder, qwen3_coder', family: 'qwen3', template: 'qwen3-coder.jinja', format: 'qwen3_coder', thinking: false, eog: '<|im_end|>', turnEnd: '\n', nextMessage: '<|im_start|>', reuse: 'whole' },
  { name: 'Llama 3.2, llama3_json', family: 'llama3', template: 'llama3.2.jinja', format: 'llama3_json', thinking: false, eog: '<|eot_id|>', turnEnd: '', nextMessage: '<|start_header_id|>', reuse: 'whole' },
  { name: 'Llama 3.1, llama3_json', family: 'llama3', template: 'llama3.1.jinja', format: 'llama3_json', thinking: false, eog: '<|eot_id|>', turnEnd: '', nextMessage: '<|start_header_id|>', reuse: 'whole' },
  { name: 'Qwen2.5, hermes', family: 'qwen3', template: 'qwen2.5.jinja', format: 'hermes', thinking: false, eog: '<|im_end|>', turnEnd: '\n', nextMessage: '<|im_start|>', reuse: 'whole' },
  {
    name: 'Hermes 3, hermes', family: 'qwen3', template: 'hermes.jinja', format: 'hermes', thinking: false, eog: '<|im_end|>', turnEnd: '\n', nextMessage: '<|im_start|>', reuse: 'whole',
    // The last tool result ends "</tool_response><|im_end|>", a non-last one "</tool_response>\n<|im_end|>".
    templateMiss: (turn) => (turn >= 3 ? 'tool' : null),
  },
  {
    name: 'Mistral Small 3.2, mistral [CALL_ID] form', family: 'mistral-markers', template: 'mistral-small-3.jinja',
    format: 'mistral', mistralForm: 'call_id', thinking: false, eog: '</s>', turnEnd: '', nextMessage: '[TOOL_RESULTS]', reuse: 'whole',
  },
  {
    name: 'Mistral Nemo, mistral list form', family: 'mistral-markers', template: 'mistral-nemo.jinja',
    format: 'mistral', mistralForm: 'list', thinking: false, eog: '</s>', turnEnd: '', nextMessage: '[TOOL_RESULTS]', reuse: 'partial',
    // The system prompt goes in front of the user message only while that message is the last one.
    templateMiss: (turn) => (turn === 2 ? 'user' : null),
  },
];

const indexesOf = (messages: ChatMessage[], pick: (m: ChatMessage) => boolean) =>
  messages.flatMap((m, i) => (pick(m) ? [i] : []));

/** Whether turn t (0-based) is one where the template itself re-renders an earlier message; checks it is that message. */
function templateMissed(s: Scenario, t: number, why: CacheExplanation): boolean {
  const role = s.templateMiss?.(t + 1) ?? null;
  if (role === null) return false;
  expect(why.divergence!.role, `turn ${t + 1}`).toBe(role);
  return true;
}

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

  it('replay on: every turn after the first reuses the previous prompt and the previous turn as far as the template keeps it', async () => {
    const why: CacheExplanation[] = [];
    withReplay = await runAgentConversation(on, {
      ...s, replay: true,
      beforeTurn: (t, messages) => { why[t] = on.explainCache(messages, { tools: AGENT_TOOLS }); },
    });
    expect(withReplay).toHaveLength(10);
    expect(withReplay[0]!.cachedTokens).toBe(0);
    if (s.reuse === 'whole') {
      const turnEnd = on.tokenize(s.eog + s.turnEnd, { addBos: false, parseSpecial: true }).length;
      for (let t = 1; t < withReplay.length; t++) {
        const prev = withReplay[t - 1]!;
        const cur = withReplay[t]!;
        // The previous prompt, the reply, and the end of its turn: every token before the new messages.
        const reused = prev.promptTokens + prev.completionTokens + turnEnd;
        expect(why[t]!.replayed).toEqual(indexesOf(cur.messages, (m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0));
        if (templateMissed(s, t, why[t]!)) continue;
        expect(cur.cachedTokens, `turn ${t + 1}`).toBe(reused);
        expect(cur.prefillTokens).toBe(cur.promptTokens - reused);
        const d = why[t]!.divergence!;
        expect(why[t]!.cachedTokens).toBe(reused);
        expect(d.tokenIndex).toBe(reused);
        // The first token not in the cache opens the first new message (the first tool result).
        expect(d.promptToken.text).toBe(s.nextMessage);
        expect(d.cachedToken).toBeNull();
        expect(d.messageIndex).toBe(Math.max(...indexesOf(cur.messages, (m) => m.role === 'assistant')) + 1);
        expect(d.role).toBe('tool');
      }
    } else {
      for (let t = 1; t < withReplay.length; t++) {
        const prev = withReplay[t - 1]!;
        const cur = withReplay[t]!;
        if (templateMissed(s, t, why[t]!)) continue;
        expect(cur.cachedTokens, `turn ${t + 1}`).toBeGreaterThan(prev.promptTokens);
        expect(cur.cachedTokens).toBeLessThan(prev.promptTokens + prev.completionTokens);
        expect(why[t]!.divergence!.messageIndex).toBe(Math.max(...indexesOf(cur.messages, (m) => m.role === 'assistant')));
        // The first turn was generated before Nemo moved the system prompt, so it cannot be located
        // in the new rendering; the previous turn, the one this turn's cache hit depends on, always can.
        expect(why[t]!.partlyReplayed).toContain(Math.max(...indexesOf(cur.messages, (m) => m.role === 'assistant')));
      }
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
      if (s.mistralForm === 'call_id') expect(turn.result.message.toolCalls!.map((c) => c.id)).toEqual(calls.map((_, k) => `c${String(t).padStart(2, '0')}k${k}agnt`));
      if (s.format !== 'qwen3_coder') expect(turn.result.message.toolCalls!.map((c) => c.function.arguments)).toEqual(calls.map((c) => c.args));
      if (s.thinking) expect(turn.result.message.reasoning?.trim()).toBe(script.thought);
    });
  });

  it('replay off: the same conversation misses on every turn', async () => {
    const why: CacheExplanation[] = [];
    const turns = await runAgentConversation(off, {
      ...s, replay: false,
      beforeTurn: (t, messages) => { why[t] = off.explainCache(messages, { tools: AGENT_TOOLS }); },
    });
    for (let t = 1; t < turns.length; t++) {
      const prev = turns[t - 1]!;
      const cur = turns[t]!;
      expect(cur.cachedTokens, `turn ${t + 1}`).toBeLessThan(prev.promptTokens + prev.completionTokens);
      expect(cur.cachedTokens).toBeLessThanOrEqual(withReplay[t]!.cachedTokens);
      if (!templateMissed(s, t, why[t]!)) expect(why[t]!.divergence!.role).toBe('assistant');
      expect(why[t]!.replayed).toEqual([]);
      expect(why[t]!.partlyReplayed).toEqual([]);
    }
    // Turns where the template itself misses earlier re-prefill the replayed (non-canonical, so
    // longer) turns too; the comparison leaves them out.
    const prefilled = (ts: AgentTurn[]) => ts.reduce((n, x, t) => n + (s.templateMiss?.(t + 1) ? 0 : x.prefillTokens), 0);
    expect(prefilled(turns)).toBeGreaterThan(prefilled(withReplay));
  });
});
