// Stored responses for `previous_response_id`: the response object as the client received it and
// the conversation that led to it, in memory, least recently used evicted first. Entries are kept
// serialized: the copy holds nothing of the request's own strings (a slice of one would keep the
// whole request alive), its size is known exactly, and every reader gets a fresh object to use.

/** The store's memory bound by default: what its serialized entries may take together (two bytes a character). */
export const DEFAULT_RESPONSES_STORE_BYTES = 256 << 20;

export interface StoredResponse<Message = unknown> {
  response: object;
  /** The conversation before this response (without instructions) plus this response's output. */
  conversation: Message[];
}

export class ResponsesStore<Message = unknown> {
  private readonly entries = new Map<string, string>();
  private used = 0;

  constructor(readonly capacity: number, readonly maxBytes = DEFAULT_RESPONSES_STORE_BYTES) {}

  get size(): number {
    return this.entries.size;
  }

  /** What the stored entries take, by the store's accounting. */
  get bytes(): number {
    return this.used;
  }

  get(id: string): StoredResponse<Message> | undefined {
    const json = this.entries.get(id);
    if (json === undefined) return undefined;
    // Map keeps insertion order: re-inserting marks it most recently used.
    this.entries.delete(id);
    this.entries.set(id, json);
    return JSON.parse(json) as StoredResponse<Message>;
  }

  /** Keeps a copy of `entry`; one larger than the whole store is not kept. */
  set(id: string, entry: StoredResponse<Message>): void {
    this.remove(id);
    const json = JSON.stringify(entry);
    const bytes = sizeOf(id, json);
    if (this.capacity <= 0 || bytes > this.maxBytes) return;
    this.entries.set(id, json);
    this.used += bytes;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.capacity && this.used <= this.maxBytes) break;
      this.remove(oldest);
    }
  }

  private remove(id: string): void {
    const json = this.entries.get(id);
    if (json === undefined) return;
    this.entries.delete(id);
    this.used -= sizeOf(id, json);
  }
}

function sizeOf(id: string, json: string): number {
  return 2 * (id.length + json.length) + 64;
}
