// What a format scanner reports, in text order. The final parser collects it into strings; the
// streamer turns it into client events.

export interface ScannerSink {
  /** Text outside calls and thinking, decided. */
  content(text: string): void;
  reasoning(text: string): void;
  /** A call to a declared tool started; its name and id are final. */
  start(name: string, id: string): void;
  /** The next piece of the current call's arguments text. */
  args(text: string): void;
  /** The current call is complete and valid. */
  end(): void;
  /** The current call turned out invalid after it started: its whole span is content. */
  abandon(): void;
  /**
   * Streaming only: the current call's arguments as sent can no longer become what the final
   * parse will give (a qwen3_coder value streamed as JSON turned out not to be JSON). Nothing more
   * is sent for it and the scanner reads no further: the rest of the reply comes from the final parse.
   */
  diverge(): void;
  /** A `</think>` with no opener before it: the output began inside reasoning. */
  strayThinkClose(): void;
}

/** Thrown by a streaming scanner past one of the limits in limits.ts. */
export class ToolCallCapError extends Error {
  constructor(readonly cap: string) {
    super(`tool-call streamer cap exceeded: ${cap}`);
    this.name = 'ToolCallCapError';
  }
}
