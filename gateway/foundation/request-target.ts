/**
 * The request target's forms and the Host grammar (RFC 9112 §3.2). A server MUST accept the
 * absolute form (`GET https://api.example/v1/orders`), which names the host in the target: the
 * path and query go on as the target, the authority replaces Host (§3.2.2).
 */

/** The target as routed and forwarded, and the authority the request names. */
export interface SplitTarget {
  /** Origin form (path and query), or the target as received when it is in no form we read. */
  readonly target: string;
  /** The absolute form's authority; undefined for every other form (Host names it then). */
  readonly authority: string | undefined;
}

// The schemes a gateway of HTTP resources takes in absolute form; others stay as received and
// are refused for not being a path (http-hygiene.ts).
const ABSOLUTE_FORM = /^https?:\/\/([^/?#]*)([^#]*)$/i;

export function splitRequestTarget(received: string): SplitTarget {
  // The origin form, nearly every request: one character compared.
  if (received.charCodeAt(0) === 0x2f) return { target: received, authority: undefined };
  const match = ABSOLUTE_FORM.exec(received);
  if (match === null) return { target: received, authority: undefined };
  const rest = match[2]!;
  // An empty path is `/` (RFC 9112 §3.2.1), a query alone comes after it.
  const target = rest === '' ? '/' : rest.charCodeAt(0) === 0x3f ? `/${rest}` : rest;
  return { target, authority: match[1]! };
}

// uri-host [":" port] (RFC 3986 §3.2.2): an IP literal, or a reg-name (an IPv4 address is one).
const HOST =
  /^(?:\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[\w\-.~!$&'()*+,;=:]+)\]|(?:[\w\-.~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/;

/** Whether `value` is a valid Host (or `:authority`, or absolute-form authority) value. */
export function isValidHost(value: string): boolean {
  return HOST.test(value);
}
