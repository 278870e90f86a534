/**
 * Who may change the gateway through its admin listener (the cache purge). A web page can
 * make a browser POST to 127.0.0.1, and DNS rebinding makes the browser treat the admin
 * listener as the attacker's own origin: so a request must carry the admin token, name this
 * listener (or a loopback name) as its Host, come from no other origin, and be JSON, which no
 * cross-site form or simple request can send without a CORS preflight that is never granted.
 *
 * The token comes from PORTICO_ADMIN_TOKEN, else from `admin-token` in the data dir (created
 * once, 0600): a single machine needs no configuration, and `cat` shows it to the operator.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { HttpProblem } from '../../shared/errors.ts';
import { readOrCreateSecretFile } from '../../shared/data-dir-secrets.ts';
import { unmappedAddress } from '../foundation/trust-proxy.ts';

export const ADMIN_TOKEN_ENV = 'PORTICO_ADMIN_TOKEN';
export const ADMIN_TOKEN_FILE = 'admin-token';
export const MIN_TOKEN_LENGTH = 32;

/** Refuses a request that may not change the gateway; `undefined` lets it through. */
export type AdminGuard = (req: IncomingMessage) => HttpProblem | undefined;

/**
 * The admin token from the environment, else from (creating if needed) the data dir; undefined
 * without either, which leaves every change refused. Errors never contain the token.
 */
export function loadAdminToken(env: NodeJS.ProcessEnv, dataDir: string | undefined): string | undefined {
  const fromEnv = env[ADMIN_TOKEN_ENV]?.trim();
  if (fromEnv !== undefined && fromEnv !== '') {
    if (fromEnv.length < MIN_TOKEN_LENGTH) {
      throw new Error(`${ADMIN_TOKEN_ENV} must be at least ${MIN_TOKEN_LENGTH} characters`);
    }
    return fromEnv;
  }
  if (dataDir === undefined) return undefined;
  const file = join(dataDir, ADMIN_TOKEN_FILE);
  const token = readOrCreateSecretFile(file, () => `${randomBytes(32).toString('base64url')}\n`).trim();
  if (token.length < MIN_TOKEN_LENGTH)
    throw new Error(`${file} holds a token shorter than ${MIN_TOKEN_LENGTH}`);
  return token;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1']);
const WILDCARDS = new Set(['0.0.0.0', '::', '']);
const BEARER = /^Bearer ([\x21-\x7e]+)$/;

/**
 * `listenerHost` is the address the admin listener is bound to: besides loopback names, a Host
 * naming it, or the address the connection arrived on, is its own; any other name is foreign.
 */
export function createAdminGuard(
  token: string | undefined,
  listenerHost: string,
  allowedHosts: readonly string[] = [],
): AdminGuard {
  const digest = token === undefined ? undefined : hash('sha256', token, 'buffer');
  return (req) =>
    checkHost(req, listenerHost, allowedHosts) ??
    checkOrigin(req) ??
    checkCredential(req, digest) ??
    checkJson(req);
}

/** Host name and port of a Host header (`[v6]:port`, `name:port`, `name`), lower-cased. */
function splitHost(value: string): { name: string; port?: string } | undefined {
  const match = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9.-]+))(?::(\d{1,5}))?$/.exec(value.toLowerCase());
  if (match === null) return undefined;
  return { name: match[1] ?? match[2]!, ...(match[3] === undefined ? {} : { port: match[3] }) };
}

/**
 * Refuses a Host that names another server: what a DNS-rebinding page sends. The dashboard,
 * /readyz and /metrics use it too, so that such a page cannot read them either.
 *
 * Its own names: loopback names, the address it is bound to or the connection arrived on
 * (on its own port, or none); and `allowedHosts` (`admin.allowedHosts`), each `name` on any
 * port or `name:port` on that one, for a scraper that names the gateway by DNS.
 */
export function checkHost(
  req: IncomingMessage,
  listenerHost: string,
  allowedHosts: readonly string[] = [],
): HttpProblem | undefined {
  const host = splitHost(req.headers.host ?? '');
  const local = unmappedAddress(req.socket.localAddress ?? '');
  const own =
    host !== undefined &&
    (((LOOPBACK_NAMES.has(host.name) ||
      host.name === local ||
      (!WILDCARDS.has(listenerHost) && host.name === listenerHost.toLowerCase())) &&
      (host.port === undefined || host.port === String(req.socket.localPort))) ||
      allowedHosts.some((entry) => allows(entry, host)));
  return own
    ? undefined
    : new HttpProblem(
        'ERR_FORBIDDEN',
        'Host does not name this admin listener: use a loopback name or its address, or list the name in admin.allowedHosts',
      );
}

/** `name` allows that name on any port; `name:port` on that port only. */
function allows(entry: string, host: { name: string; port?: string }): boolean {
  const allowed = splitHost(entry);
  if (allowed === undefined || allowed.name !== host.name) return false;
  return allowed.port === undefined || allowed.port === host.port;
}

/** A browser states the page's origin; only the admin listener's own is accepted. */
function checkOrigin(req: IncomingMessage): HttpProblem | undefined {
  const origin = req.headers.origin;
  if (origin === undefined || origin.toLowerCase() === `http://${req.headers.host ?? ''}`.toLowerCase()) {
    return undefined;
  }
  return new HttpProblem('ERR_FORBIDDEN', 'cross-origin requests are refused');
}

function checkCredential(req: IncomingMessage, digest: Buffer | undefined): HttpProblem | undefined {
  const match = BEARER.exec(req.headers.authorization ?? '');
  if (match === null) {
    return new HttpProblem('ERR_UNAUTHENTICATED', 'the admin token is required', {
      headers: { 'WWW-Authenticate': 'Bearer realm="portico-admin"' },
    });
  }
  // Compared as digests: equal lengths for timingSafeEqual, and no timing on the token's length.
  const given = hash('sha256', match[1]!, 'buffer');
  if (digest !== undefined && timingSafeEqual(given, digest)) return undefined;
  return new HttpProblem('ERR_INVALID_TOKEN', 'the admin token is not valid', {
    headers: { 'WWW-Authenticate': 'Bearer realm="portico-admin", error="invalid_token"' },
  });
}

function checkJson(req: IncomingMessage): HttpProblem | undefined {
  const type = (req.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type === 'application/json') return undefined;
  return new HttpProblem('ERR_UNSUPPORTED_MEDIA_TYPE', 'send Content-Type: application/json');
}
