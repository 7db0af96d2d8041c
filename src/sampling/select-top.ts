// Partial selection: the best k candidates, ordered, in O(n log k) without sorting the vocabulary.
// A bounded heap keeps the worst of the current best k at its root, so at vocab 152k and k = 40
// almost every token costs one comparison against the root.
import { type Candidates, ranksBefore } from './candidates.js';

/**
 * Writes the best `k` live candidates, best first (see ranksBefore), to `c.scratchIds` and
 * `c.scratchLogits`. The live set is left as it was; `c.takeScratch(k)` adopts the selection.
 */
export function selectTop(c: Candidates, k: number): void {
  const n = c.size;
  if (k > n) k = n;
  const { ids, logits, scratchIds: heapIds, scratchLogits: heapLogits } = c;

  const siftDown = (start: number, size: number): void => {
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= size) return;
      let worst = left;
      const right = left + 1;
      if (right < size && ranksBefore(heapLogits[left], heapIds[left], heapLogits[right], heapIds[right])) {
        worst = right;
      }
      if (!ranksBefore(heapLogits[i], heapIds[i], heapLogits[worst], heapIds[worst])) return;
      swap(i, worst);
      i = worst;
    }
  };
  const swap = (a: number, b: number): void => {
    const id = heapIds[a];
    heapIds[a] = heapIds[b];
    heapIds[b] = id;
    const logit = heapLogits[a];
    heapLogits[a] = heapLogits[b];
    heapLogits[b] = logit;
  };

  for (let i = 0; i < k; i++) {
    heapIds[i] = ids[i];
    heapLogits[i] = logits[i];
  }
  for (let i = (k >> 1) - 1; i >= 0; i--) siftDown(i, k);
  for (let i = k; i < n; i++) {
    if (ranksBefore(logits[i], ids[i], heapLogits[0], heapIds[0])) {
      heapIds[0] = ids[i];
      heapLogits[0] = logits[i];
      siftDown(0, k);
    }
  }
  // Heap sort: moving the worst to the back each time leaves the best first.
  for (let end = k - 1; end > 0; end--) {
    swap(0, end);
    siftDown(0, end);
  }
}
