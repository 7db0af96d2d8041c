// The text of the span being read, kept until it is known to be a call or content: pieces from
// earlier pushes plus a range of the current text not yet sliced, so a whole-reply parse slices
// each span once however many steps read it.

export class SpanText {
  private readonly parts: string[] = [];
  private rangeText: string | null = null;
  private rangeFrom = 0;
  private rangeTo = 0;
  length = 0;

  keep(text: string, from: number, to: number): void {
    if (this.rangeText === text && this.rangeTo === from) {
      this.rangeTo = to;
    } else {
      this.flush();
      this.rangeText = text;
      this.rangeFrom = from;
      this.rangeTo = to;
    }
    this.length += to - from;
  }

  take(): string {
    this.flush();
    const s = this.parts.length === 1 ? this.parts[0]! : this.parts.join('');
    this.clear();
    return s;
  }

  clear(): void {
    if (this.parts.length > 0) this.parts.length = 0;
    this.rangeText = null;
    this.length = 0;
  }

  private flush(): void {
    if (this.rangeText === null) return;
    this.parts.push(this.rangeText.slice(this.rangeFrom, this.rangeTo));
    this.rangeText = null;
  }
}
