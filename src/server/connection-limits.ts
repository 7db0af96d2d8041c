// How many connections the server holds, overall and per client address. A connection past
// either limit is still read, so that its request gets a 503 with Retry-After in the protocol's
// error shape (not a reset the client cannot tell from a crash), and then closed; past twice the
// overall limit the kernel's connection is dropped unanswered.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { TooManyConnectionsError } from './errors.js';

export const DEFAULT_MAX_CONNECTIONS = 512;
export const DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 128;

export class ConnectionLimits {
  private total = 0;
  private readonly perClient = new Map<string, number>();
  private readonly overLimit = new WeakMap<Socket, TooManyConnectionsError>();

  constructor(readonly max = DEFAULT_MAX_CONNECTIONS, readonly maxPerClient = DEFAULT_MAX_CONNECTIONS_PER_CLIENT) {}

  get open(): number {
    return this.total;
  }

  attach(server: Server): void {
    server.maxConnections = 2 * this.max;
    server.on('connection', (socket: Socket) => {
      const client = socket.remoteAddress ?? '';
      const fromClient = (this.perClient.get(client) ?? 0) + 1;
      this.perClient.set(client, fromClient);
      this.total++;
      if (this.total > this.max) this.overLimit.set(socket, new TooManyConnectionsError(false, this.max));
      else if (fromClient > this.maxPerClient) this.overLimit.set(socket, new TooManyConnectionsError(true, this.maxPerClient));
      socket.once('close', () => {
        this.total--;
        const left = (this.perClient.get(client) ?? 1) - 1;
        if (left > 0) this.perClient.set(client, left);
        else this.perClient.delete(client);
      });
    });
  }

  /** Throws the 503 for a request that arrived on a connection past a limit. */
  check(socket: Socket): void {
    const err = this.overLimit.get(socket);
    if (err !== undefined) throw err;
  }
}
