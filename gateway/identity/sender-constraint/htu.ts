/**
 * The `htu` of a DPoP proof against the URI the request was sent to (RFC 9449 §4.3): both
 * without query and fragment, compared after the syntax- and scheme-based normalisation of
 * RFC 3986 §6.2.2-6.2.3 (scheme and host in lower case, the default port dropped, dot
 * segments removed, percent-escapes of unreserved characters decoded and the rest in upper
 * case), so that two spellings of one URI match and two URIs never do.
 */
import { trustsPeer, type Peer, type TrustProxy } from '../../foundation/trust-proxy.ts';

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** `%7e` → `~`, `%2f` → `%2F`: one spelling per percent-escape (RFC 3986 §6.2.2.1-2). */
function normalisePercentEscapes(path: string): string {
  return path.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
}

/** The normal form of an http(s) URI without its query and fragment; undefined when it is none. */
export function normaliseHtu(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '')
    return undefined;
  // WHATWG URL already lower-cases scheme and host, drops the default port and dot segments.
  return `${url.protocol}//${url.host}${normalisePercentEscapes(url.pathname)}`;
}

/** What the request tells of the URI its client addressed. */
export interface AddressedRequest extends Peer {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** The first value of a forwarding header a trusted proxy set (the one its client addressed). */
function forwarded(req: AddressedRequest, name: string): string | undefined {
  const value = req.headers[name];
  const first = (Array.isArray(value) ? value[0] : value)?.split(',')[0]?.trim();
  return first === '' ? undefined : first;
}

/**
 * The URI the client sent the request to: `https://` (the listener is TLS), the authority it
 * named and the path as received. Behind a trusted load balancer (`proxy.trustProxy`), the
 * scheme and host it forwarded (`X-Forwarded-Proto`, `X-Forwarded-Host`), as the forwarded
 * headers upstream say; from anyone else those headers are ignored, or a client could make
 * a proof for one gateway work at another.
 */
export function requestHtu(
  req: AddressedRequest,
  authority: string,
  target: string,
  trustProxy: TrustProxy,
): string | undefined {
  const trusted = trustsPeer(trustProxy, req);
  const scheme = (trusted ? forwarded(req, 'x-forwarded-proto') : undefined) ?? 'https';
  const host = (trusted ? forwarded(req, 'x-forwarded-host') : undefined) ?? authority;
  const query = target.indexOf('?');
  return normaliseHtu(`${scheme}://${host}${query === -1 ? target : target.slice(0, query)}`);
}
