// Whether a rendered prompt leaves a `<think>` open, so the model's output begins inside reasoning
// (templates of thinking models often end the generation prompt with `<think>\n`). The server
// passes this to the streamer as `startsInReasoning`.

export function promptEndsInReasoning(prompt: string): boolean {
  const open = prompt.lastIndexOf('<think>');
  return open >= 0 && prompt.indexOf('</think>', open) < 0;
}
