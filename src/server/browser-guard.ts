// What keeps a web page the operator opens from driving a server on their own machine. A browser
// lets any page send "simple" cross-site POSTs (form or text bodies, no preflight) and, through DNS
// rebinding, same-origin requests to a name that now resolves to 127.0.0.1. So: bodies must be
// JSON (a page cannot send that cross-site without a CORS preflight, which only allowed origins
// pass); a request carrying an Origin must come from an allowed one (none unless --cors-origin);
// and while the server listens on loopback, the Host must be a loopback name or address.
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { HostNotAllowedError, OriginNotAllowedError } from './errors.js';

/** Headers a browser may send on allowed cross-origin requests: the SDKs' own among them. */
const ALLOWED_HEADERS = [
  'authorization', 'content-type', 'x-api-key', 'anthropic-version', 'anthropic-beta', 'anthropic-dangerous-direct-browser-access',
  'openai-organization', 'openai-project', 'openai-beta', 'x-stainless-arch', 'x-stainless-lang', 'x-stainless-os',
  'x-stainless-package-version', 'x-stainless-retry-count', 'x-stainless-runtime', 'x-stainless-runtime-version', 'x-stainless-timeout',
  'x-stainless-helper-method', 'x-stainless-async', 'x-stainless-poll-helper', 'x-stainless-custom-poll-interval',
].join(', ');

export interface BrowserGuardOptions {
  /** Origins allowed to send requests (exact `scheme://host[:port]`), or '*' for any. */
  corsOrigins?: readonly string[];
}

export class BrowserGuard {
  private readonly origins: Set<string>;
  private readonly anyOrigin: boolean;
  /** Set by listen(): whether the server is bound to loopback only, so Host names are checked. */
  loopbackOnly = false;

  constructor(options: BrowserGuardOptions = {}) {
    const list = options.corsOrigins ?? [];
    this.anyOrigin = list.includes('*');
    this.origins = new Set(list.filter((o) => o !== '*').map((o) => o.replace(/\/+$/, '').toLowerCase()));
  }

  /**
   * Checks a request's Host and Origin; for an allowed cross-origin request, puts the CORS headers
   * on the response (on the raw response, so streamed replies carry them too).
   */
  check(headers: IncomingHttpHeaders, res: ServerResponse): void {
    if (this.loopbackOnly) {
      const host = headers.host;
      if (host === undefined || !isLoopbackHost(host)) throw new HostNotAllowedError(host ?? '');
    }
    const origin = headers.origin;
    if (origin === undefined) return;
    if (!this.allows(origin)) throw new OriginNotAllowedError(origin);
    res.setHeader('access-control-allow-origin', this.anyOrigin ? '*' : origin);
    res.setHeader('vary', 'Origin');
  }

  /** The answer to a CORS preflight from an allowed origin (check() has run). */
  preflight(res: ServerResponse): void {
    res.setHeader('access-control-allow-methods', 'GET, POST, OPTIONS');
    res.setHeader('access-control-allow-headers', ALLOWED_HEADERS);
    res.setHeader('access-control-max-age', '600');
  }

  private allows(origin: string): boolean {
    return this.anyOrigin || this.origins.has(origin.toLowerCase());
  }
}

/** Whether a Host header names this machine's loopback: localhost (and *.localhost), 127.0.0.0/8, ::1. */
export function isLoopbackHost(host: string): boolean {
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) {
    const end = name.indexOf(']');
    if (end < 0) return false;
    name = name.slice(1, end);
  } else {
    const colon = name.lastIndexOf(':');
    if (colon >= 0 && name.indexOf(':') === colon) name = name.slice(0, colon);
  }
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  const kind = isIP(name);
  if (kind === 4) return name.startsWith('127.');
  if (kind === 6) return name === '::1' || name === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(name);
  return false;
}

/** Whether a bind address keeps the server on loopback. */
export function isLoopbackBind(host: string): boolean {
  return isLoopbackHost(host.includes(':') && !host.startsWith('[') ? `[${host}]` : host);
}
