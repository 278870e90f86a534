/**
 * The headers of the forwarded request and of the relayed response: hop-by-hop fields
 * removed both ways, forwarding facts stated by this gateway, never taken from the client
 * unless a trusted load balancer sent them.
 */
import { IDENTITY_HEADER } from '../../shared/identity-assertion.ts';
import { REQUEST_ID_HEADER } from '../foundation/header-names.ts';
import { peerAddress, trustsPeer, type TrustProxy } from '../foundation/trust-proxy.ts';
import type { ClientRequest } from '../pipeline/client-request.ts';
import type { UpstreamRequest } from '../pipeline/upstream-request.ts';

/** RFC 9110 §7.6.1, plus the de facto ones that proxies must not forward either. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
]);

/**
 * The headers to drop when forwarding a message: the fixed hop-by-hop set, plus every field
 * the sender named in `Connection` (RFC 9110 §7.6.1).
 */
export function hopByHopNames(connectionHeader: string | string[] | undefined): ReadonlySet<string> {
  // `keep-alive` and `close` name nothing beyond the fixed set: no copy per message.
  if (connectionHeader === undefined || connectionHeader === 'keep-alive' || connectionHeader === 'close')
    return HOP_BY_HOP;
  const names = new Set(HOP_BY_HOP);
  const values = Array.isArray(connectionHeader) ? connectionHeader : [connectionHeader];
  for (const value of values) {
    for (const token of value.split(',')) {
      const name = token.trim().toLowerCase();
      if (name !== '') names.add(name);
    }
  }
  return names;
}

/** Never forwarded from the client: identity and forwarding facts are ours to state. */
const CLIENT_FORWARDING = new Set(['forwarded', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host']);
/**
 * Not forwarded: `host` is the upstream's, `expect` was answered here (100-continue), and
 * `authorization` goes no further than the edge on every route: where a caller was
 * established the assertion replaces it, and an `auth: none` route (the API description,
 * the docs) has no use for a token a client library attaches to every request. A `DPoP`
 * proof goes with it: it was checked and used up here.
 */
const NOT_FORWARDED = new Set([
  'host',
  'expect',
  'authorization',
  'dpop',
  IDENTITY_HEADER,
  REQUEST_ID_HEADER,
  'x-real-ip',
]);

const COLON = 0x3a;

/**
 * This gateway's `Via` entry (RFC 9110 §7.6.3): the protocol version the message came in with
 * (`1.1`, `1.0`, `2`; the protocol name is left out for HTTP) and the configured pseudonym.
 */
export function viaEntry(
  version: { httpVersionMajor: number; httpVersionMinor: number },
  viaName: string,
): string {
  const { httpVersionMajor: major, httpVersionMinor: minor } = version;
  return major >= 2 ? `${major} ${viaName}` : `${major}.${minor} ${viaName}`;
}

/**
 * The request's headers for the upstream, as a flat name, value, ... list: `upstream`'s, with
 * the forwarding facts of the client's connection (`req`) stated and this gateway's `Via`
 * entry appended to the client's (`viaName` is its pseudonym).
 */
export function forwardedHeaders(
  upstream: UpstreamRequest,
  req: ClientRequest,
  trustProxy: TrustProxy,
  viaName: string,
): string[] {
  const trusted = trustsPeer(trustProxy, req);
  const drop = hopByHopNames(req.headers.connection);
  const out: string[] = [];
  // What a trusted load balancer said before us; never read otherwise.
  const incoming = trusted ? new Map<string, string[]>() : undefined;
  let cookies: string[] | undefined;
  // Earlier hops' entries, in order: ours goes after them, on one line.
  const via: string[] = [];
  upstream.headers.forEach((name, value) => {
    // HTTP/2 pseudo-headers are no HTTP/1.1 fields (`:authority` goes on as the forwarded host).
    // `Connection` itself and the standard hop-by-hop names are in `drop` whoever set them.
    if (name.charCodeAt(0) === COLON || NOT_FORWARDED.has(name) || HOP_BY_HOP.has(name)) return;
    if (CLIENT_FORWARDING.has(name)) {
      incoming?.set(name, [...(incoming.get(name) ?? []), value]);
      return;
    }
    if (name === 'cookie') {
      // HTTP/2 may split Cookie into one field per pair; HTTP/1.1 takes one (RFC 9113 §8.2.3).
      (cookies ??= []).push(value);
      return;
    }
    if (name === 'via') {
      via.push(value);
      return;
    }
    out.push(name, value);
  }, drop);
  if (cookies !== undefined) out.push('cookie', cookies.join('; '));
  via.push(viaEntry(req, viaName));
  out.push('via', via.join(', '));

  // Without a trusted balancer the client address is the peer's, already worked out.
  const address = trusted ? peerAddress(req) : upstream.clientIp;
  const host = upstream.authority;
  const forwarded = `for=${forwardedNode(address)};proto=https;host="${quotedPairs(host)}"`;
  out.push(
    'forwarded',
    appended(incoming, 'forwarded', forwarded),
    'x-forwarded-for',
    appended(incoming, 'x-forwarded-for', address),
    'x-forwarded-proto',
    incoming?.get('x-forwarded-proto')?.[0] ?? 'https',
    'x-forwarded-host',
    incoming?.get('x-forwarded-host')?.[0] ?? host,
    REQUEST_ID_HEADER,
    upstream.correlationId,
  );
  return out;
}

/**
 * `value` after what a trusted balancer sent in the field, or alone. A function of the module,
 * not a closure per request (most requests have no balancer's fields at all).
 */
function appended(incoming: Map<string, string[]> | undefined, name: string, value: string): string {
  const before = incoming?.get(name);
  return before === undefined ? value : [...before, value].join(', ');
}

/** RFC 7239: an IPv6 address is bracketed and the node quoted. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}

/**
 * The inside of a quoted-string (RFC 9110 §5.6.4): `\` and `"` as quoted pairs, or a Host
 * ending in a backslash would leave it unterminated. Most hosts have neither: no new string.
 */
function quotedPairs(value: string): string {
  return value.includes('"') || value.includes('\\') ? value.replace(/[\\"]/g, '\\$&') : value;
}

/**
 * Never relayed from the upstream, on any route: this gateway owns DPoP at its edge. It checks
 * every proof (on every route a `DPoP` token may arrive at) and never forwards one, so an
 * upstream's `DPoP-Nonce` names nothing the gateway would accept; a client MUST put the latest
 * nonce it got in its next proof (RFC 9449 §8), and would then be refused, or retry once, on
 * every call. The gateway's own nonce is set after this (stages/authenticate.ts). An upstream's
 * `WWW-Authenticate` is relayed as it is: it may challenge for a scheme of its own, and it carries
 * nothing a client feeds into its next proof.
 */
const NOT_RELAYED = new Set(['dpop-nonce']);

/**
 * The upstream's response headers without its hop-by-hop fields and those of NOT_RELAYED; with
 * `via` (this gateway's entry, for a final answer), that entry appended to the upstream's own.
 */
export function relayedHeaders(
  headers: Record<string, string | string[] | undefined>,
  via?: string,
): Record<string, string | string[]> {
  const drop = hopByHopNames(headers['connection']);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || drop.has(name) || NOT_RELAYED.has(name)) continue;
    out[name] = value;
  }
  if (via !== undefined) {
    const before = out['via'];
    out['via'] = before === undefined ? via : [before, via].flat().join(', ');
  }
  return out;
}
