// The priority queue both BPE flavours merge from: the best candidate pair comes first, and among
// equals the leftmost one (llama.cpp's and Hugging Face's order). Lower `priority` is better.
export class MergeQueue {
  private priority: number[] = [];
  private left: number[] = [];
  private right: number[] = [];
  private size: number[] = [];
  private n = 0;

  get length(): number {
    return this.n;
  }

  clear(): void {
    this.n = 0;
  }

  push(priority: number, left: number, right: number, size: number): void {
    let i = this.n++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!sortsBefore(priority, left, this.priority[parent]!, this.left[parent]!)) break;
      this.move(parent, i);
      i = parent;
    }
    this.set(i, priority, left, right, size);
  }

  /** Removes the best entry and returns its index fields through `out` ([left, right, size]). */
  pop(out: [number, number, number]): void {
    out[0] = this.left[0]!;
    out[1] = this.right[0]!;
    out[2] = this.size[0]!;
    const last = --this.n;
    if (last === 0) return;
    const p = this.priority[last]!, l = this.left[last]!, r = this.right[last]!, s = this.size[last]!;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= last) break;
      if (child + 1 < last && sortsBefore(this.priority[child + 1]!, this.left[child + 1]!, this.priority[child]!, this.left[child]!)) {
        child++;
      }
      if (!sortsBefore(this.priority[child]!, this.left[child]!, p, l)) break;
      this.move(child, i);
      i = child;
    }
    this.set(i, p, l, r, s);
  }

  private move(from: number, to: number): void {
    this.set(to, this.priority[from]!, this.left[from]!, this.right[from]!, this.size[from]!);
  }

  private set(i: number, priority: number, left: number, right: number, size: number): void {
    this.priority[i] = priority;
    this.left[i] = left;
    this.right[i] = right;
    this.size[i] = size;
  }
}

function sortsBefore(priorityA: number, leftA: number, priorityB: number, leftB: number): boolean {
  return priorityA < priorityB || (priorityA === priorityB && leftA < leftB);
}
