// Ids the server mints for responses, messages and items (`chatcmpl-`, `msg_`, `resp_`, `fc_`...).
// Tool-call ids are the tool-call layer's own, so a replayed call matches what kiln generated.
import { randomUUID } from 'node:crypto';

/** `prefix` + 32 random hex digits (randomUUID draws from a cached entropy pool: cheap per call). */
export function mintId(prefix: string): string {
  return prefix + randomUUID().replaceAll('-', '');
}

export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
