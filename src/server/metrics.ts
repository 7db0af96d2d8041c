// Server counters and gauges, rendered in the Prometheus text exposition format for GET /metrics.
import type { Timings, Usage } from '../generate/generate.js';
import type { RuntimeLoad } from '../runtime/runtime.js';

/** A Prometheus histogram of durations in seconds (cumulative buckets, sum and count). */
export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }

  observe(seconds: number): void {
    this.sum += seconds;
    this.count++;
    for (let i = 0; i < this.bounds.length; i++) if (seconds <= this.bounds[i]!) this.counts[i]!++;
  }

  samples(): [string, string, number][] {
    return [
      ...this.bounds.map((b, i): [string, string, number] => ['_bucket', `le="${b}"`, this.counts[i]!]),
      ['_bucket', 'le="+Inf"', this.count],
      ['_sum', '', this.sum],
      ['_count', '', this.count],
    ];
  }
}

/** Time to first token and queue wait: milliseconds to a minute. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Inter-token latency: a fast decode step to a stalled stream. */
const TOKEN_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2];

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

  readonly timeToFirstToken = new Histogram(LATENCY_BUCKETS);
  readonly interTokenLatency = new Histogram(TOKEN_BUCKETS);
  readonly queueWait = new Histogram(LATENCY_BUCKETS);

  constructor(private readonly slots: number, private readonly load: () => RuntimeLoad) {}

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

  /** Requests waiting in the runtime's FIFO queue for a slot, as the runtime counts them. */
  get queueDepth(): number {
    return this.load().waiting;
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
    const load = this.load();
    metric('kiln_queue_depth', 'gauge', 'Generations waiting for a sequence slot (kiln_sequences_waiting).', [['', load.waiting]]);
    metric('kiln_slots', 'gauge', 'Sequence slots (--parallel).', [['', this.slots]]);
    metric('kiln_sequences_running', 'gauge', 'Sequences holding a slot (prefilling or decoding).', [['', load.running]]);
    metric('kiln_sequences_waiting', 'gauge', 'Requests waiting for a slot.', [['', load.waiting]]);
    metric('kiln_step_tokens', 'gauge', 'Tokens in the last forward step (decode tokens and prefill chunks).', [['', load.lastStepTokens]]);
    metric('kiln_kv_cache_used_ratio', 'gauge', 'KV cache positions holding tokens, over all slots.', [['', load.kvCapacity > 0 ? load.kvUsed / load.kvCapacity : 0]]);
    metric('kiln_kv_cache_tokens', 'gauge', 'KV cache positions holding tokens, over all slots.', [['', load.kvUsed]]);
    const histogram = (name: string, help: string, h: Histogram) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
      for (const [suffix, labels, value] of h.samples()) lines.push(`${name}${suffix}${labels ? `{${labels}}` : ''} ${value}`);
    };
    histogram('kiln_time_to_first_token_seconds', 'From the request to its first streamed token.', this.timeToFirstToken);
    histogram('kiln_inter_token_latency_seconds', 'Between two streamed tokens of one generation.', this.interTokenLatency);
    histogram('kiln_queue_wait_seconds', 'From the request to the moment it got a sequence slot.', this.queueWait);
    return lines.join('\n') + '\n';
  }
}
