// Collects a reply from the event stream for the non-streaming responses: content, reasoning and
// the calls the client would have received (started and confirmed), in index order. Built from the
// same events the streaming encoders see, so both modes agree.
import type { TokenLogprob } from '../generate/generate.js';
import type { GenerationEvent } from './generation-events.js';

export interface AccumulatedCall {
  index: number;
  id: string;
  name: string;
  arguments: string;
  ended: boolean;
}

export class ReplyAccumulator {
  content = '';
  reasoning = '';
  readonly logprobs: TokenLogprob[] = [];
  private readonly calls = new Map<number, AccumulatedCall>();

  push(ev: GenerationEvent): void {
    switch (ev.type) {
      case 'logprob':
        this.logprobs.push(ev.logprob);
        break;
      case 'content':
        this.content += ev.text;
        break;
      case 'reasoning':
        this.reasoning += ev.text;
        break;
      case 'tool_call_start':
        this.calls.set(ev.index, { index: ev.index, id: ev.id, name: ev.name, arguments: '', ended: false });
        break;
      case 'tool_call_arguments': {
        const call = this.calls.get(ev.index);
        if (call && !call.ended) call.arguments += ev.delta;
        break;
      }
      case 'tool_call_end': {
        const call = this.calls.get(ev.index);
        if (call) call.ended = true;
        break;
      }
    }
  }

  /** The confirmed calls, in index order. */
  get toolCalls(): AccumulatedCall[] {
    return [...this.calls.values()].filter((c) => c.ended).sort((a, b) => a.index - b.index);
  }
}
