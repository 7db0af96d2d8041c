// Matching a set of markers at one position of text that may end inside one of them.

/** Result of matchMarker: no marker starts here. */
export const NO_MATCH = -1;
/** Result of matchMarker: the text ends inside a marker; wait for more before deciding. */
export const PARTIAL = -2;

/** Which of `markers` starts at text[j]: its index, PARTIAL if text[j..n) ends inside one, or NO_MATCH. */
export function matchMarker(text: string, j: number, n: number, markers: readonly string[]): number {
  let partial = false;
  for (let k = 0; k < markers.length; k++) {
    const m = markers[k]!;
    const len = Math.min(m.length, n - j);
    let p = 0;
    while (p < len && text.charCodeAt(j + p) === m.charCodeAt(p)) p++;
    if (p === m.length) return k;
    if (p === len) partial = true;
  }
  return partial ? PARTIAL : NO_MATCH;
}
