// Follows generated text through a thinking block: reports where `</think>` closes it, even when
// the marker arrives split across pieces, holding only a marker's length of text.
const THINK_CLOSE = '</think>';

export class ThinkWatcher {
  private tail = '';

  /** The text after `</think>` when this piece closes the block, else null. */
  push(text: string): string | null {
    if (text === '') return null;
    const joined = this.tail + text;
    const at = joined.indexOf(THINK_CLOSE);
    if (at >= 0) {
      this.tail = '';
      return joined.slice(at + THINK_CLOSE.length);
    }
    this.tail = joined.slice(-(THINK_CLOSE.length - 1));
    return null;
  }
}

/** Adds the ids to a bitset mask. */
export function setBits(mask: Uint32Array, ids: readonly number[]): Uint32Array {
  for (const id of ids) mask[id >>> 5]! |= 1 << (id & 31);
  return mask;
}
