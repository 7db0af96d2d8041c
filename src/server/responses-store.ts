// Stored responses for `previous_response_id`: the response object as the client received it and
// the conversation that led to it, in memory, least recently used evicted first.

export interface StoredResponse<Message = unknown> {
  response: object;
  /** The conversation before this response (without instructions) plus this response's output. */
  conversation: Message[];
}

export class ResponsesStore<Message = unknown> {
  private readonly entries = new Map<string, StoredResponse<Message>>();

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(id: string): StoredResponse<Message> | undefined {
    const entry = this.entries.get(id);
    if (entry !== undefined) {
      // Map keeps insertion order: re-inserting marks it most recently used.
      this.entries.delete(id);
      this.entries.set(id, entry);
    }
    return entry;
  }

  set(id: string, entry: StoredResponse<Message>): void {
    if (this.capacity <= 0) return;
    this.entries.delete(id);
    this.entries.set(id, entry);
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }
}
