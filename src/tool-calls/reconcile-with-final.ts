// End of stream: the final parse is authoritative. Streamed calls are matched with parsed calls by
// position and name; a match gets only the unsent rest of its arguments (and its end). A streamed
// call that disagrees gets nothing more, with a warning, and the parsed call goes out one-shot
// under a fresh index. Content and reasoning get what the client has not seen yet (all of it, with
// a warning, if what was sent is not where the final parse begins).
import { isPlaceholderId, uniqueId } from './call-id.js';
import type { SentText } from './sent-text.js';
import { StreamedState, streamedCall } from './streamed-state.js';
import type { ParsedToolCalls, ToolCallEvent, ToolCallFormat } from './types.js';

export interface ReconcileContext {
  format: ToolCallFormat;
  mintId: (format: ToolCallFormat) => string;
  warn(msg: string, fields?: object): void;
}

function restOf(sent: SentText, final: string, what: string, ctx: ReconcileContext): string {
  if (sent.isPrefixOf(final)) return final.slice(sent.length);
  ctx.warn(`streamed ${what} differs from the final parse; sending the final ${what} in full`, {
    streamedLength: sent.length,
    finalLength: final.length,
  });
  return final;
}

export function reconcileWithFinal(
  state: StreamedState,
  final: ParsedToolCalls,
  out: ToolCallEvent[],
  ctx: ReconcileContext,
): void {
  const reasoning = restOf(state.reasoning, final.reasoning, 'reasoning', ctx);
  if (reasoning.length > 0) {
    StreamedState.append(out, { type: 'reasoning', text: reasoning });
    state.reasoning.push(reasoning);
  }
  const content = restOf(state.content, final.content, 'content', ctx);
  if (content.length > 0) {
    StreamedState.append(out, { type: 'content', text: content });
    state.content.push(content);
  }

  const live = state.calls.filter((c) => !c.abandoned);
  let usedIds: Set<string> | null = null;
  for (let j = 0; j < final.calls.length; j++) {
    const f = final.calls[j]!;
    const s = live[j];
    if (s !== undefined && s.name === f.name && s.args.isPrefixOf(f.arguments) && (!s.ended || s.args.equals(f.arguments))) {
      const rest = f.arguments.slice(s.args.length);
      if (rest.length > 0) {
        StreamedState.append(out, { type: 'tool_call_arguments', index: s.index, delta: rest });
        s.args.push(rest);
      }
      if (!s.ended) {
        out.push({ type: 'tool_call_end', index: s.index });
        s.ended = true;
      }
      s.final = f.arguments;
      continue;
    }
    if (s !== undefined) {
      ctx.warn('streamed tool call disagrees with the final parse; sending the parsed call under a fresh index', {
        index: s.index,
        streamedName: s.name,
        finalName: f.name,
      });
    }
    const minted = isPlaceholderId(f.id);
    let id = minted ? ctx.mintId(ctx.format) : f.id;
    // A long minted id cannot repeat; a Mistral one (short) or one from elsewhere might.
    if (!minted || ctx.format === 'mistral') {
      usedIds ??= new Set(state.calls.map((c) => c.id));
      if (usedIds.has(id)) id = uniqueId(usedIds, () => ctx.mintId(ctx.format));
      usedIds.add(id);
    }
    const index = state.nextIndex++;
    const call = streamedCall(index, id, f.name);
    call.ended = true;
    call.final = f.arguments;
    state.calls.push(call);
    out.push({ type: 'tool_call_start', index, id, name: f.name });
    if (f.arguments.length > 0) out.push({ type: 'tool_call_arguments', index, delta: f.arguments });
    out.push({ type: 'tool_call_end', index });
  }
  for (let j = final.calls.length; j < live.length; j++) {
    ctx.warn('streamed tool call is not in the final parse; it gets no end', { index: live[j]!.index, name: live[j]!.name });
  }
}
