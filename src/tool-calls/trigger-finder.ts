// Finds the next place a marker could start: a marker's first character followed by one of the
// markers' second characters (or the end of the text, where a marker may be arriving). Fast in both
// shapes of input: a token of a few characters, and a whole reply, where indexOf jumps between
// triggers and each trigger's next position is remembered, so text full of one trigger never
// rescans for another.

/** How far to look character by character before handing over to indexOf. */
const NEAR = 32;

export class TriggerFinder {
  private readonly triggers: string;
  /** For each ASCII code: 1 if a marker starts with it. Every marker is ASCII. */
  private readonly isFirst = new Uint8Array(128);
  /** For each ASCII code: 1 if a marker has it second. */
  private readonly isSecond = new Uint8Array(128);
  /** Where each trigger next occurs in the current text: -1 nowhere, -2 not looked yet. */
  private readonly positions: number[];
  private fresh = true;

  constructor(markers: readonly string[]) {
    this.triggers = [...new Set(markers.map((m) => m[0]!))].join('');
    this.positions = new Array<number>(this.triggers.length).fill(-2);
    for (const m of markers) {
      this.isFirst[m.charCodeAt(0)] = 1;
      this.isSecond[m.charCodeAt(1)] = 1;
    }
  }

  /** Forgets remembered positions: the next text is a different one. */
  reset(): void {
    this.fresh = true;
  }

  /** The next index in text[i..n) where a marker could start, or -1. */
  next(text: string, i: number, n: number): number {
    const first = this.isFirst;
    let j = i;
    for (;;) {
      const near = Math.min(n, j + NEAR);
      for (; j < near; j++) {
        const c = text.charCodeAt(j);
        if (c < 128 && first[c] === 1 && this.mayOpen(text, j, n)) return j;
      }
      if (j >= n) return -1;
      j = this.nextTrigger(text, j, n);
      if (j < 0) return -1;
      if (this.mayOpen(text, j, n)) return j;
      j++;
    }
  }

  /** False when the character after the trigger at j rules out every marker (most triggers in prose). */
  private mayOpen(text: string, j: number, n: number): boolean {
    if (j + 1 >= n) return true;
    const c = text.charCodeAt(j + 1);
    return c < 128 && this.isSecond[c] === 1;
  }

  private nextTrigger(text: string, i: number, n: number): number {
    const triggers = this.triggers;
    if (triggers.length === 1) {
      const j = text.indexOf(triggers, i);
      return j < n ? j : -1;
    }
    if (this.fresh) {
      this.fresh = false;
      this.positions.fill(-2);
    }
    let best = -1;
    for (let k = 0; k < triggers.length; k++) {
      let j = this.positions[k]!;
      if (j !== -1 && j < i) this.positions[k] = j = text.indexOf(triggers[k]!, i);
      if (j >= 0 && j < n && (best < 0 || j < best)) best = j;
    }
    return best;
  }
}
