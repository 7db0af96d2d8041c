// Ids the server mints for responses, messages and items (`chatcmpl-`, `msg_`, `resp_`, `fc_`...).
// Tool-call ids are the tool-call layer's own, so a replayed call matches what kiln generated.
import { randomBytes } from 'node:crypto';

export function mintId(prefix: string): string {
  return prefix + randomBytes(12).toString('hex');
}

export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
