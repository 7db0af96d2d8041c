// A scripted language model for tests that need the model to choose: the real tokenizer, chat
// template, generate loop, sampler (masks included), tool-call streamer and server, over a forward
// pass whose logits say which of a few scripted replies the model prefers. After each token the
// model looks at its reply so far and ranks the next token of every reply that still fits, in
// the order the replies are listed: the first fitting reply's token gets the highest logit, the
// next one's a lower one, every other token far less. A reply written out in full is followed by
// the end-of-turn token; a reply that fits none ends there too. Unlike forcedTokens, a constraint
// that narrows the choice gets the model's best allowed token, as from a real model.
import type { CompiledGraph } from '../../src/backend/backend.js';
import { generate } from '../../src/generate/generate.js';
import { ChatEngine, type ChatConfig } from '../../src/runtime/chat.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { Scheduler } from '../../src/runtime/scheduler.js';
import { SlotPool } from '../../src/runtime/slot-pool.js';
import type { Tokenizer } from '../../src/tokenizer/tokenizer.js';

const PREFERRED = 20;
const UNLIKELY = -20;

export interface ScriptedModel {
  /** A chat engine on the scripted model (the runtime's tokenizer and GGUF metadata). */
  readonly chats: ChatEngine;
  /** The replies the model prefers, best first. */
  say(...replies: string[]): void;
}

export function scriptedModel(rt: Runtime, config: ChatConfig = {}): ScriptedModel {
  const tokenizer = rt.tokenizer;
  const eos = tokenizer.eosId!;
  let replies: string[] = [];
  let promptLength = 0;
  // The token at every position of the one sequence slot.
  const sequence: number[] = [];
  const forward: CompiledGraph['forward'] = async (tokens, positions, _slot, _all, out) => {
    for (let i = 0; i < tokens.length; i++) sequence[positions[i]!] = tokens[i]!;
    sequence.length = positions[positions.length - 1]! + 1;
    out.fill(UNLIKELY);
    const reply = spell(tokenizer, sequence.slice(promptLength));
    let rank = 0;
    for (const r of replies) {
      if (!r.startsWith(reply)) continue;
      const next = r === reply ? eos : tokenizer.encode(r.slice(reply.length), { addSpecial: false, parseSpecial: true })[0]!;
      if (out[next]! === UNLIKELY) out[next] = PREFERRED - rank++;
    }
    if (rank === 0) out[eos] = PREFERRED;
  };
  const graph: CompiledGraph = {
    outputWidth: tokenizer.vocabSize,
    forward,
    // One slot: a step is its rows in order; the wanted rows' scores are copied out.
    forwardBatch: async (step, out) => {
      const width = tokenizer.vocabSize;
      const all = new Float32Array(step.tokens.length * width);
      for (let i = 0; i < step.tokens.length; i++) await forward(step.tokens.subarray(i, i + 1), step.positions.subarray(i, i + 1), 0, false, all.subarray(i * width, (i + 1) * width));
      step.outputs.forEach((row, j) => out.set(all.subarray(row * width, (row + 1) * width), j * width));
    },
    copySlot: () => {},
    dispose: () => {},
  };
  const slots = new SlotPool(1);
  const steps = new Scheduler(graph, 256, slots.all);
  const chats = new ChatEngine({
    tokenizer,
    gguf: rt.gguf,
    contextSize: rt.info.contextSize,
    generate: async (req) => {
      promptLength = req.prompt.length;
      const slot = await slots.acquire(req.prompt, req.signal);
      try {
        return await generate({ steps, tokenizer, contextSize: rt.info.contextSize }, slot, req);
      } finally {
        slots.release(slot);
      }
    },
    cachedTokens: () => slots.cachedTokens(),
  }, { replay: false, ...config });
  return {
    chats,
    say(...r: string[]) {
      replies = r;
    },
  };
}

function spell(tokenizer: Tokenizer, tokens: number[]): string {
  const decoder = tokenizer.createDecoder();
  let text = '';
  for (const t of tokens) text += decoder.push(t);
  return text;
}
