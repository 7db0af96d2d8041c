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
