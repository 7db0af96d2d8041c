// A server on the tiny Qwen3 model (real forward pass, KV cache, BPE tokenizer, chat template,
// tool-call streamer and replay cache) whose chat generations write scripted replies through the
// chat layer's forcedTokens hook. The script is tokenized by the model's own vocabulary, so
// markers arrive split across many tokens, as from a real model. It also records what each
// generation was asked (the chat layer's input), for tests that check what reached the template.
import { readFileSync } from 'node:fs';
import type { ChatMessage } from '../../src/chat/messages.js';
import type { ChatOptions } from '../../src/runtime/chat.js';
import type { LoadOptions } from '../../src/runtime/runtime.js';
import type { ServerOptions } from '../../src/server/create-server.js';
import type { ServedRuntime } from '../../src/server/server-context.js';
import { MODELS, SHARED } from '../helpers/paths.js';
import { type Running, startServer } from './helpers.js';

export const QWEN = `${MODELS}/tiny-qwen3-q8_0.gguf`;
export const QWEN_ID = 'tiny-qwen3';
/** <|im_end|>, the tiny Qwen3's end of turn. */
const EOS = 1997;

export interface ForcedServer {
  s: Running;
  /**
   * The next generations write these replies, one each, in order; the last one repeats.
   * Returns the first reply's tokens.
   */
  say(...replies: string[]): number[];
  /** What each generation was asked, in order. */
  readonly seen: ChatOptions[];
  /** The assistant messages generation `n` (counted from 0) was asked to continue from. */
  assistantTurns(n: number): ChatMessage[];
}

export async function forcedServer(
  template: string, options: Partial<ServerOptions> = {}, load: Partial<LoadOptions> = {},
): Promise<ForcedServer> {
  let script: number[][] = [];
  const seen: ChatOptions[] = [];
  const next = () => (script.length > 1 ? script.shift()! : script[0] ?? []);
  const s = await startServer(
    { model: QWEN, chatTemplate: readFileSync(`${SHARED}/templates/${template}`, 'utf8'), contextSize: 4096, slots: 1, ...load },
    { modelId: QWEN_ID, ...options },
    (rt) => Object.create(rt, {
      chatStream: {
        value: (o: ChatOptions) => {
          seen.push(o);
          return rt.chatStream({ ...o, forcedTokens: next() });
        },
      },
    }) as ServedRuntime,
  );
  return {
    s,
    seen,
    assistantTurns: (n) => seen[n]!.messages.filter((m) => m.role === 'assistant'),
    say(...replies: string[]) {
      script = replies.map((text) => [...s.runtime.tokenize(text, { addBos: false }), EOS]);
      return script[0]!.slice(0, -1);
    },
  };
}
