// The tool-call stage of the streaming chain: decoded text in, typed events out, live. Content
// streams holding back only what could still be a marker; a call's name goes out once it is
// complete and declared, then its arguments as they are written (the closing `}` waits for the
// call to be confirmed). finish() reconciles with parseToolCalls on the whole text, which is
// authoritative. Any throw inside a push is contained: that push's events are dropped, the stream
// stays at what the client has received, and finish() sends the rest from the final parse. A
// qwen3_coder value streamed as JSON that stops being JSON (json-value-stream.ts) cannot be taken
// back: that call gets no end, streaming stops, and finish() sends the parsed call whole.
import { mintCallId, placeholderIds } from './call-id.js';
import { createScanner } from './create-scanner.js';
import type { FormatScanner } from './format-scanner.js';
import { parseToolCalls } from './parse-tool-calls.js';
import { reconcileWithFinal } from './reconcile-with-final.js';
import { ToolCallCapError, type ScannerSink } from './scanner-sink.js';
import { StreamedState, streamedCall, type StreamedCall } from './streamed-state.js';
import { ToolSet } from './tool-set.js';
import type { ParsedToolCalls, ParseToolCallsOptions, ToolCallEvent, ToolCallFormat, ToolCallLogger } from './types.js';

export interface IncrementalToolCallStreamerOptions extends ParseToolCallsOptions {
  /** Where warnings (disagreement with the final parse, caps) and contained errors go. */
  logger?: ToolCallLogger;
  /** Included in every log line. */
  requestId?: string;
  /** Test hook, called inside the isolation boundary after each push's text is scanned (and at finish). */
  faultInjector?: (stage: 'push' | 'finish', text: string) => void;
}

// Scanner reports, recorded during a push and turned into events only if the push succeeds.
const CONTENT = 0;
const REASONING = 1;
const START = 2;
const ARGS = 3;
const END = 4;
const ABANDON = 5;
const STRAY = 6;
const DIVERGE = 7;

/** The reports of one push, in reused arrays (a push is per token; it must not allocate much). */
class OpLog implements ScannerSink {
  readonly kinds: number[] = [];
  readonly texts: string[] = [];
  readonly ids: string[] = [];
  n = 0;

  private add(kind: number, text: string, id: string): void {
    const n = this.n++;
    this.kinds[n] = kind;
    this.texts[n] = text;
    this.ids[n] = id;
  }
  content(s: string): void {
    this.add(CONTENT, s, '');
  }
  reasoning(s: string): void {
    this.add(REASONING, s, '');
  }
  start(name: string, id: string): void {
    this.add(START, name, id);
  }
  args(s: string): void {
    this.add(ARGS, s, '');
  }
  end(): void {
    this.add(END, '', '');
  }
  abandon(): void {
    this.add(ABANDON, '', '');
  }
  strayThinkClose(): void {
    this.add(STRAY, '', '');
  }
  diverge(): void {
    this.add(DIVERGE, '', '');
  }
}

const SILENT: ToolCallLogger = { warn() {}, error() {} };

export class IncrementalToolCallStreamer {
  private readonly format: ToolCallFormat;
  private readonly opts: IncrementalToolCallStreamerOptions;
  private readonly logger: ToolCallLogger;
  private readonly mintId: (format: ToolCallFormat) => string;
  private readonly scanner: FormatScanner;
  private readonly chunks: string[] = [];
  private readonly ops = new OpLog();
  private readonly faultInjector: IncrementalToolCallStreamerOptions['faultInjector'];
  private readonly state = new StreamedState();
  /** The started call that has neither ended nor been abandoned. */
  private open: StreamedCall | null = null;
  /** A started call turned out invalid: its span and all later content come from the final parse. */
  private contentDeferred = false;
  /** Incremental streaming has stopped; text is only collected for the final parse. */
  private collecting = false;
  private finished = false;
  private final: ParsedToolCalls | null = null;

  constructor(opts: IncrementalToolCallStreamerOptions) {
    this.opts = opts;
    this.format = opts.format;
    this.logger = opts.logger ?? SILENT;
    this.mintId = opts.mintId ?? mintCallId;
    this.faultInjector = opts.faultInjector;
    this.scanner = createScanner(this.ops, {
      format: opts.format,
      tools: new ToolSet(opts.tools),
      startsInReasoning: opts.startsInReasoning ?? false,
      streaming: true,
      mintId: this.mintId,
    });
  }

  push(text: string): ToolCallEvent[] {
    if (this.finished || typeof text !== 'string' || text.length === 0) return [];
    this.chunks.push(text);
    if (this.collecting) return [];
    this.ops.n = 0;
    try {
      this.scanner.feed(text);
      if (this.faultInjector !== undefined) this.faultInjector('push', text);
      return this.commit();
    } catch (err) {
      this.fault(err);
      return [];
    }
  }

  finish(): ToolCallEvent[] {
    if (this.finished) return [];
    this.finished = true;
    let out: ToolCallEvent[] = [];
    if (!this.collecting) {
      this.ops.n = 0;
      try {
        this.scanner.end();
        if (this.faultInjector !== undefined) this.faultInjector('finish', '');
        out = this.commit();
      } catch (err) {
        this.fault(err);
      }
    }
    let final: ParsedToolCalls;
    try {
      final = parseToolCalls(this.chunks.join(''), {
        format: this.format,
        tools: this.opts.tools,
        startsInReasoning: this.opts.startsInReasoning,
        mintId: placeholderIds(),
      });
    } catch (err) {
      this.logger.error('tool-call final parse failed; the reply ends with what was streamed', this.fields({ error: String(err) }));
      return out;
    }
    this.final = final;
    reconcileWithFinal(this.state, final, out, {
      format: this.format,
      mintId: this.mintId,
      warn: (msg, fields) => this.logger.warn(msg, this.fields(fields)),
    });
    return out;
  }

  /**
   * After finish(): the reply as the client received it, with the ids it was sent: content,
   * reasoning and the calls that ended, in index order. Null before finish().
   */
  get result(): ParsedToolCalls | null {
    return this.final === null ? null : this.state.result(this.final);
  }

  /** Turns this push's scanner reports into events and records them as sent. */
  private commit(): ToolCallEvent[] {
    const { kinds, texts, ids, n } = this.ops;
    const state = this.state;
    // Most pushes are one token of content or of arguments: one event, no merging.
    if (n === 1) {
      const kind = kinds[0];
      if (kind === CONTENT && !this.contentDeferred) {
        state.content.push(texts[0]!);
        return [{ type: 'content', text: texts[0]! }];
      }
      if (kind === ARGS) {
        this.open!.args.push(texts[0]!);
        return [{ type: 'tool_call_arguments', index: this.open!.index, delta: texts[0]! }];
      }
    }
    const out: ToolCallEvent[] = [];
    for (let k = 0; k < n; k++) {
      switch (kinds[k]) {
        case CONTENT: {
          if (this.contentDeferred) break;
          const text = texts[k]!;
          state.content.push(text);
          const last = out[out.length - 1];
          if (last?.type === 'content') out[out.length - 1] = { type: 'content', text: last.text + text };
          else out.push({ type: 'content', text });
          break;
        }
        case REASONING: {
          const text = texts[k]!;
          state.reasoning.push(text);
          StreamedState.append(out, { type: 'reasoning', text });
          break;
        }
        case START: {
          const call = streamedCall(state.nextIndex++, ids[k]!, texts[k]!);
          state.calls.push(call);
          this.open = call;
          out.push({ type: 'tool_call_start', index: call.index, id: call.id, name: call.name });
          break;
        }
        case ARGS: {
          const delta = texts[k]!;
          const call = this.open!;
          call.args.push(delta);
          const last = out[out.length - 1];
          if (last?.type === 'tool_call_arguments' && last.index === call.index) {
            out[out.length - 1] = { type: 'tool_call_arguments', index: call.index, delta: last.delta + delta };
          } else {
            out.push({ type: 'tool_call_arguments', index: call.index, delta });
          }
          break;
        }
        case END:
          this.open!.ended = true;
          out.push({ type: 'tool_call_end', index: this.open!.index });
          this.open = null;
          break;
        case ABANDON:
          this.open!.abandoned = true;
          this.open = null;
          this.contentDeferred = true;
          break;
        case DIVERGE:
          // What was sent of this call can no longer match the final parse: it gets nothing more and
          // no end, and finish() sends the parsed call whole under a fresh index, with the rest of
          // the reply (the scanner has stopped reading). Only model output this odd gets here.
          this.open!.abandoned = true;
          this.open = null;
          this.collecting = true;
          return out;
        case STRAY:
          if (this.opts.startsInReasoning === undefined) {
            // The text already sent as content was reasoning; only the final parse can say the rest.
            this.logger.warn(
              'output began inside reasoning but the streamer was not told (pass startsInReasoning); the rest comes from the final parse',
              this.fields(),
            );
            this.collecting = true;
            return out;
          }
          break;
      }
    }
    return out;
  }

  private fault(err: unknown): void {
    this.collecting = true;
    this.ops.n = 0;
    if (err instanceof ToolCallCapError) {
      this.logger.warn('tool-call streaming stopped at a cap; the rest comes from the final parse', this.fields({ cap: err.cap }));
    } else {
      this.logger.error(
        'tool-call streamer failed; streaming stops and the rest comes from the final parse',
        this.fields({ error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) }),
      );
    }
  }

  private fields(extra?: object): object {
    return { requestId: this.opts.requestId, format: this.format, ...extra };
  }
}
