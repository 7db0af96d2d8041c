// The final parser: the whole reply in, content, reasoning and calls out. It is authoritative at
// the end of a stream (the streamer reconciles with it) and never throws on model output.
import { mintCallId } from './call-id.js';
import { createScanner } from './create-scanner.js';
import type { ScannerSink } from './scanner-sink.js';
import { ToolSet } from './tool-set.js';
import type { ParsedToolCall, ParsedToolCalls, ParseToolCallsOptions } from './types.js';

class Collector implements ScannerSink {
  readonly contentParts: string[] = [];
  readonly reasoningParts: string[] = [];
  readonly calls: ParsedToolCall[] = [];
  stray = false;
  private currentArgs = '';

  content(s: string): void {
    this.contentParts.push(s);
  }
  reasoning(s: string): void {
    this.reasoningParts.push(s);
  }
  start(name: string, id: string): void {
    this.currentArgs = '';
    this.calls.push({ id, name, arguments: '' });
  }
  args(s: string): void {
    this.currentArgs += s;
  }
  end(): void {
    this.calls[this.calls.length - 1]!.arguments = this.currentArgs;
  }
  abandon(): void {
    this.calls.pop();
  }
  strayThinkClose(): void {
    this.stray = true;
  }
  diverge(): never {
    throw new Error('a scanner that is not streaming never diverges');
  }
}

function run(text: string, opts: ParseToolCallsOptions, tools: ToolSet, startsInReasoning: boolean): Collector {
  const c = new Collector();
  const scanner = createScanner(c, {
    format: opts.format,
    tools,
    startsInReasoning,
    streaming: false,
    mintId: opts.mintId ?? mintCallId,
  });
  scanner.feed(text);
  scanner.end();
  return c;
}

export function parseToolCalls(text: string, opts: ParseToolCallsOptions): ParsedToolCalls {
  const tools = new ToolSet(opts.tools);
  let c = run(text, opts, tools, opts.startsInReasoning ?? false);
  // Told nothing, a `</think>` with no opener means the output began inside reasoning.
  if (opts.startsInReasoning === undefined && c.stray) c = run(text, opts, tools, true);
  return { content: c.contentParts.join(''), reasoning: c.reasoningParts.join(''), calls: c.calls };
}
