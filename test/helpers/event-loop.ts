// Counts the turns of the event loop while a promise is pending: work that holds the event loop
// for its whole length lets none run.
export async function turnsDuring<T>(work: Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = () => {
    if (done) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { value: await work, turns };
  } finally {
    done = true;
  }
}
