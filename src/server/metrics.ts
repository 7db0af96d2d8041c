// Server counters and gauges, rendered in the Prometheus text exposition format for GET /metrics.
import type { Timings, Usage } from '../generate/generate.js';

export class Metrics {
  private readonly requests = new Map<string, number>();
  promptTokens = 0;
  completionTokens = 0;
  cachedPromptTokens = 0;
  decodeTokens = 0;
  decodeSeconds = 0;
  /** Decode speed of the last finished generation. */
  lastDecodeTokensPerSecond = 0;
  /** Generations admitted and not yet finished (running or waiting for a slot). */
  generationsInFlight = 0;

  constructor(private readonly slots: number) {}

  request(route: string, status: number): void {
    const key = `route=${JSON.stringify(route)},status="${status}"`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
  }

  generation(usage: Usage, timings: Timings | undefined): void {
    this.promptTokens += usage.promptTokens;
    this.completionTokens += usage.completionTokens;
    this.cachedPromptTokens += usage.cachedTokens;
    if (timings && timings.decodeTokens > 0 && timings.decodeMs > 0) {
      this.decodeTokens += timings.decodeTokens;
      this.decodeSeconds += timings.decodeMs / 1000;
      this.lastDecodeTokensPerSecond = (timings.decodeTokens * 1000) / timings.decodeMs;
    }
  }

  /** Requests beyond the slot count wait in the runtime's FIFO queue. */
  get queueDepth(): number {
    return Math.max(0, this.generationsInFlight - this.slots);
  }

  render(): string {
    const lines: string[] = [];
    const metric = (name: string, type: string, help: string, samples: [string, number][]) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [labels, value] of samples) lines.push(`${name}${labels ? `{${labels}}` : ''} ${value}`);
    };
    metric('kiln_requests_total', 'counter', 'HTTP requests by route and status.', [...this.requests].sort());
    metric('kiln_prompt_tokens_total', 'counter', 'Prompt tokens of finished generations.', [['', this.promptTokens]]);
    metric('kiln_prompt_tokens_cached_total', 'counter', 'Prompt tokens served from the KV cache (not prefilled).', [['', this.cachedPromptTokens]]);
    metric('kiln_completion_tokens_total', 'counter', 'Generated tokens.', [['', this.completionTokens]]);
    metric('kiln_decode_tokens_total', 'counter', 'Tokens produced by decode steps.', [['', this.decodeTokens]]);
    metric('kiln_decode_seconds_total', 'counter', 'Time spent in decode steps.', [['', this.decodeSeconds]]);
    metric('kiln_decode_tokens_per_second', 'gauge', 'Decode speed of the last finished generation.', [['', this.lastDecodeTokensPerSecond]]);
    metric('kiln_requests_in_flight', 'gauge', 'Generations running or waiting for a slot.', [['', this.generationsInFlight]]);
    metric('kiln_queue_depth', 'gauge', 'Generations waiting for a sequence slot.', [['', this.queueDepth]]);
    metric('kiln_slots', 'gauge', 'Sequence slots (--parallel).', [['', this.slots]]);
    return lines.join('\n') + '\n';
  }
}
