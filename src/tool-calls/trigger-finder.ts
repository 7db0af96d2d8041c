// Finds the next character that could open a marker, fast in both shapes of input: a token of a
// few characters (one pass over it) and a whole reply (indexOf per trigger character, each
// position remembered, so text full of one trigger never rescans for another).

export class TriggerFinder {
  private readonly triggers: string;
  /** For each ASCII code: 1 if a marker starts with it. Every marker starts with ASCII. */
  private readonly isTrigger = new Uint8Array(128);
  /** For each ASCII code: 1 if it is the second character of a marker. */
  private readonly isSecond = new Uint8Array(128);
  /** Where each trigger next occurs in the current text: -1 nowhere, -2 not looked yet. */
  private readonly positions: number[];
  private fresh = true;

  constructor(markers: readonly string[]) {
    this.triggers = [...new Set(markers.map((m) => m[0]!))].join('');
    this.positions = new Array<number>(this.triggers.length).fill(-2);
    for (const m of markers) {
      this.isTrigger[m.charCodeAt(0)] = 1;
      this.isSecond[m.charCodeAt(1)] = 1;
    }
  }

  /** Forgets remembered positions: the next text is a different one. */
  reset(): void {
    this.fresh = true;
  }

  /** The index of the next trigger in text[i..n), or -1. */
  next(text: string, i: number, n: number): number {
    const triggers = this.triggers;
    if (triggers.length === 1) {
      const j = text.indexOf(triggers, i);
      return j < n ? j : -1;
    }
    const table = this.isTrigger;
    const near = Math.min(n, i + 32);
    for (let j = i; j < near; j++) {
      const c = text.charCodeAt(j);
      if (c < 128 && table[c] === 1) return j;
    }
    if (near === n) return -1;
    if (this.fresh) {
      this.fresh = false;
      this.positions.fill(-2);
    }
    let best = -1;
    for (let k = 0; k < triggers.length; k++) {
      let j = this.positions[k]!;
      if (j !== -1 && j < near) this.positions[k] = j = text.indexOf(triggers[k]!, near);
      if (j >= 0 && j < n && (best < 0 || j < best)) best = j;
    }
    return best;
  }

  /** False when the character after the trigger at j rules out every marker (most triggers in prose). */
  mayOpen(text: string, j: number, n: number): boolean {
    if (j + 1 >= n) return true;
    const c = text.charCodeAt(j + 1);
    return c < 128 && this.isSecond[c] === 1;
  }
}
