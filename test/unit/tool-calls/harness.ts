// Shared by the tool-call tests and the streamer bench's fuzz mode: declared tools, chunkers, and a
// runner that streams a text and checks every invariant the streamer promises against the final
// parse. Throws (with the chunking) on the first broken invariant.
import type { Prng } from '../../helpers/prng.js';
import { IncrementalToolCallStreamer } from '../../../src/tool-calls/incremental-tool-call-streamer.js';
import { parseToolCalls } from '../../../src/tool-calls/parse-tool-calls.js';
import type { OpenAITool, ParsedToolCalls, ToolCallEvent, ToolCallFormat } from '../../../src/tool-calls/types.js';

function tool(name: string, properties: Record<string, unknown> = {}): OpenAITool {
  return { type: 'function', function: { name, description: `${name} tool`, parameters: { type: 'object', properties } } };
}

export const TOOLS: OpenAITool[] = [
  tool('get_weather', { city: { type: 'string' }, state: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }),
  tool('get_current_weather', { city: { type: 'string' }, state: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }),
  tool('calculate_area', { shape: { type: 'string' }, dimensions: { type: 'object' }, precision: { type: 'integer' } }),
  tool('test_types', {
    int_param: { type: 'integer' },
    float_param: { type: 'float' },
    num: { type: 'number' },
    bool_param: { type: 'boolean' },
    str_param: { type: 'string' },
    obj_param: { type: 'object' },
    arr: { type: 'array' },
    anyof_int: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
    type_as_array: { type: ['integer', 'null'] },
    multi_non_null: { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] },
    code: { type: 'string' },
    opt_obj: { anyOf: [{ type: 'object' }, { type: 'null' }] },
    opt_arr: { type: ['array', 'null'] },
  }),
  tool('search', { q: { type: 'string' } }),
  tool('add', { a: { type: 'number' }, b: { type: 'number' } }),
  tool('final_answer', { trigger: { type: 'boolean' } }),
  tool('searchTool', { query: { type: 'string' }, limit: { type: 'integer' } }),
  tool('getOpenIncidentsTool'),
  tool('complexTool'),
  tool('write_file', { path: { type: 'string' }, content: { type: 'string' } }),
  tool('get_current_temperature', { location: { type: 'string' }, unit: { type: 'string' } }),
  tool('get_age', { name: { type: 'string' } }),
];

/** Markers of every format; content the streamer sends must not contain them (unless the parse's does). */
export const MARKERS = [
  '<tool_call>',
  '</tool_call>',
  '<think>',
  '</think>',
  '[TOOL_CALLS]',
  '[ARGS]',
  '[CALL_ID]',
  '<|python_tag|>',
  '<function=',
  '</function>',
  '<parameter=',
  '</parameter>',
];

/** Deterministic ids: the same text mints the same ids in any chunking. */
export function counterIds(): (format: ToolCallFormat) => string {
  let n = 0;
  return (format) => {
    n++;
    return format === 'mistral' ? `id${String(n).padStart(7, '0')}` : `call_${n}`;
  };
}

export interface LogRecord {
  level: 'warn' | 'error';
  msg: string;
  fields?: object;
}

export interface StreamRun {
  /** Events, one array per push and a last one for finish(). */
  batches: ToolCallEvent[][];
  final: ParsedToolCalls;
  /** What the client received, assembled from the events. */
  received: ParsedToolCalls;
  logs: LogRecord[];
}

export interface StreamOptions {
  format: ToolCallFormat;
  tools?: OpenAITool[];
  startsInReasoning?: boolean;
  faultInjector?: (stage: 'push' | 'finish', text: string) => void;
}

export function streamChunks(chunks: readonly string[], opts: StreamOptions): StreamRun {
  const logs: LogRecord[] = [];
  const tools = opts.tools ?? TOOLS;
  const s = new IncrementalToolCallStreamer({
    format: opts.format,
    tools,
    startsInReasoning: opts.startsInReasoning,
    mintId: counterIds(),
    requestId: 'req-test',
    faultInjector: opts.faultInjector,
    logger: {
      warn: (msg, fields) => logs.push({ level: 'warn', msg, fields }),
      error: (msg, fields) => logs.push({ level: 'error', msg, fields }),
    },
  });
  const batches = chunks.map((c) => s.push(c));
  batches.push(s.finish());
  const final = parseToolCalls(chunks.join(''), { format: opts.format, tools, startsInReasoning: opts.startsInReasoning, mintId: counterIds() });
  return { batches, final, received: assemble(batches), logs };
}

export function assemble(batches: readonly ToolCallEvent[][]): ParsedToolCalls {
  let content = '';
  let reasoning = '';
  const calls = new Map<number, { id: string; name: string; arguments: string; ended: boolean }>();
  for (const ev of batches.flat()) {
    if (ev.type === 'content') content += ev.text;
    else if (ev.type === 'reasoning') reasoning += ev.text;
    else if (ev.type === 'tool_call_start') calls.set(ev.index, { id: ev.id, name: ev.name, arguments: '', ended: false });
    else if (ev.type === 'tool_call_arguments') calls.get(ev.index)!.arguments += ev.delta;
    else calls.get(ev.index)!.ended = true;
  }
  const ended = [...calls.entries()].filter(([, c]) => c.ended).sort(([a], [b]) => a - b);
  return { content, reasoning, calls: ended.map(([, c]) => ({ id: c.id, name: c.name, arguments: c.arguments })) };
}

function fail(what: string, chunks: readonly string[]): never {
  throw new Error(`${what}\nchunks: ${JSON.stringify(chunks)}`);
}

function isHigh(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
function isLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** True when the text has no lone surrogate. */
export function wellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isHigh(c)) {
      if (!isLow(s.charCodeAt(i + 1))) return false;
      i++;
    } else if (isLow(c)) return false;
  }
  return true;
}

/**
 * Checks what the streamer promises. `strict` (no fault, no cap, no undeclared auto-reasoning):
 * no warning or error was logged, so streaming and the final parse agreed throughout.
 */
export function checkRun(run: StreamRun, chunks: readonly string[], strict: boolean): void {
  const { batches, final, received } = run;
  if (received.content !== final.content) fail(`content ${JSON.stringify(received.content)} != final ${JSON.stringify(final.content)}`, chunks);
  if (received.reasoning !== final.reasoning) fail(`reasoning ${JSON.stringify(received.reasoning)} != ${JSON.stringify(final.reasoning)}`, chunks);
  const got = received.calls.map((c) => [c.name, c.arguments]);
  const want = final.calls.map((c) => [c.name, c.arguments]);
  if (JSON.stringify(got) !== JSON.stringify(want)) fail(`calls ${JSON.stringify(got)} != final ${JSON.stringify(want)}`, chunks);

  const started = new Map<number, { ended: boolean; name: string }>();
  const ids = new Set<string>();
  const pairSafe = wellFormed(chunks.join(''));
  for (const batch of batches) {
    for (let k = 0; k < batch.length; k++) {
      const ev = batch[k]!;
      const text = ev.type === 'content' || ev.type === 'reasoning' ? ev.text : ev.type === 'tool_call_arguments' ? ev.delta : null;
      if (text !== null) {
        if (text.length === 0) fail(`empty ${ev.type} event`, chunks);
        if (pairSafe && !wellFormed(text)) fail(`${ev.type} event splits a surrogate pair: ${JSON.stringify(text)}`, chunks);
      }
      if (ev.type === 'content' && !MARKERS.some((m) => final.content.includes(m))) {
        for (const m of MARKERS) if (ev.text.includes(m)) fail(`content event contains marker ${m}`, chunks);
      }
      if (ev.type === 'tool_call_start') {
        if (started.has(ev.index)) fail(`index ${ev.index} started twice`, chunks);
        if (ids.has(ev.id)) fail(`id ${ev.id} reused`, chunks);
        ids.add(ev.id);
        started.set(ev.index, { ended: false, name: ev.name });
      } else if (ev.type === 'tool_call_arguments' || ev.type === 'tool_call_end') {
        const call = started.get(ev.index);
        if (call === undefined) fail(`${ev.type} for index ${ev.index} before its start`, chunks);
        if (call.ended) fail(`${ev.type} for index ${ev.index} after its end`, chunks);
        if (ev.type === 'tool_call_end') {
          call.ended = true;
          // The closing character goes out with the end, in the same batch.
          const prev = batch[k - 1];
          if (strict && (prev === undefined || prev.type !== 'tool_call_arguments' || prev.index !== ev.index)) {
            fail(`tool_call_end for index ${ev.index} without its held last argument character in the same batch`, chunks);
          }
        }
      }
    }
  }
  if (strict && run.logs.length > 0) fail(`unexpected log: ${JSON.stringify(run.logs)}`, chunks);
}

// ---- chunkers ----

export function codePoints(text: string): string[] {
  return Array.from(text);
}

export function fixedChunks(text: string, size: number): string[] {
  const cps = codePoints(text);
  const out: string[] = [];
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(''));
  return out;
}

/** Two-piece splits just before, at and after every start and end of every marker. */
export function markerCuts(text: string): string[][] {
  const cuts = new Set<number>();
  for (const m of MARKERS) {
    for (let at = text.indexOf(m); at >= 0; at = text.indexOf(m, at + 1)) {
      for (const p of [at, at + m.length]) for (const d of [-1, 0, 1]) cuts.add(p + d);
    }
  }
  const out: string[][] = [];
  for (const p of [...cuts].sort((a, b) => a - b)) {
    if (p <= 0 || p >= text.length) continue;
    if (isLow(text.charCodeAt(p)) && isHigh(text.charCodeAt(p - 1))) continue;
    out.push([text.slice(0, p), text.slice(p)]);
  }
  return out;
}

/** Random pieces of 1..maxLen code points (or UTF-16 units when `units`, which may split pairs). */
export function randomChunks(text: string, rng: Prng, maxLen: number, units = false): string[] {
  const items = units ? text.split('') : codePoints(text);
  const out: string[] = [];
  for (let i = 0; i < items.length; ) {
    const n = 1 + rng.int(maxLen);
    out.push(items.slice(i, i + n).join(''));
    i += n;
  }
  return out;
}

/** Every chunking the invariance tests use for one text. */
export function allChunkings(text: string, rng: Prng): string[][] {
  const out: string[][] = [[text], codePoints(text)];
  for (const size of [2, 3, 5, 8, 13]) out.push(fixedChunks(text, size));
  out.push(...markerCuts(text));
  for (let k = 0; k < 6; k++) out.push(randomChunks(text, rng, 1 + rng.int(12)));
  return out.filter((c) => c.length > 0);
}
