/**
 * How a request's value of a Vary field is compared with the one a stored response was
 * selected by (RFC 9111 section 4.1). The section lets a cache normalise both values "by
 * combining multiple header fields with the same name or normalizing whitespace, or by
 * standard semantics of the header field"; this file does exactly that, per field:
 *
 * - every field: members of a list compared without the whitespace around them, and several
 *   lines of one field as one comma-separated line;
 * - the proactive negotiation fields `Accept`, `Accept-Encoding` and `Accept-Language` (RFC
 *   9110 section 12.5): their members' names are case-insensitive (media ranges 8.3.1,
 *   content codings 8.4.1, language ranges RFC 4647 section 2.1), and what a member means is
 *   its weight (12.4.2), not its place in the list: `en, de` and `de, en` give both languages
 *   weight 1, so the client said it has no preference between them. Members are compared as a
 *   set of (name, weight), `q=1.0` written as no `q`. A member that does not parse leaves the
 *   field compared as written (with whitespace normalised), never guessed at.
 *
 * Besides, a stored response selected by `Accept-Language` also answers a request whose one
 * most preferred language is exactly the stored response's `Content-Language`
 * (`languageSelects`): by the field's semantics the service would pick that language for it.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** Fields whose members are weighted by `q` and whose order carries no meaning (RFC 9110 12.4.2). */
const WEIGHTED_FIELDS = new Set(['accept', 'accept-encoding', 'accept-language']);
/** RFC 9110 section 12.4.2: `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`. */
const QVALUE = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/;
/** A member's name: a token, or a media range `type/subtype` (RFC 9110 5.6.2, 8.3.1). */
const NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:\/[!#$%&'*+.^_`|~0-9A-Za-z-]+)?$/;

/** One member of a weighted field: its name (lower case), other parameters as written, its weight. */
interface Weighted {
  name: string;
  params: string;
  q: number;
}

/**
 * The request's value of Vary field `name` as the cache keys it; `undefined` when absent.
 * Credentials are compared by digest, never kept.
 */
export function varyValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  const members = (Array.isArray(value) ? value.join(',') : value).split(',').map((member) => member.trim());
  const text = (WEIGHTED_FIELDS.has(name) ? weightedKey(members) : undefined) ?? members.join(',');
  return name === 'authorization' || name === 'cookie'
    ? createHash('sha256').update(text).digest('base64url')
    : text;
}

/** The members of a weighted field in one order, or undefined when one does not parse. */
function weightedKey(members: readonly string[]): string | undefined {
  const parsed = parseWeighted(members);
  if (parsed === undefined) return undefined;
  return parsed
    .map((member) => `${member.name}${member.params}${member.q === 1 ? '' : `;q=${member.q}`}`)
    .sort()
    .join(',');
}

function parseWeighted(members: readonly string[]): Weighted[] | undefined {
  const out: Weighted[] = [];
  for (const member of members) {
    // 5.6.1.2: empty list elements count for nothing.
    if (member === '') continue;
    const [rawName = '', ...rawParams] = member.split(';').map((part) => part.trim());
    if (!NAME.test(rawName)) return undefined;
    let q = 1;
    let params = '';
    for (const param of rawParams) {
      const equals = param.indexOf('=');
      if (equals <= 0) return undefined;
      const key = param.slice(0, equals).trim().toLowerCase();
      const value = param.slice(equals + 1).trim();
      if (key === 'q') {
        if (!QVALUE.test(value)) return undefined;
        q = Number(value);
      } else params += `;${key}=${value}`;
    }
    out.push({ name: rawName.toLowerCase(), params, q });
  }
  return out;
}

/**
 * Whether a stored response whose `Content-Language` is `contentLanguage` answers a request
 * with this `Accept-Language`: the request's highest weight is above zero and given to one
 * language range only, and that range is exactly the stored response's one language. Then
 * no other language could be the service's choice for this request (RFC 9110 section
 * 12.5.4), and the stored response proves the service has that one.
 */
export function languageSelects(
  acceptLanguage: string | string[] | undefined,
  contentLanguage: string | string[] | undefined,
): boolean {
  if (acceptLanguage === undefined || typeof contentLanguage !== 'string') return false;
  const language = contentLanguage.trim().toLowerCase();
  // One language only: a response in several is a choice this rule cannot reason about.
  if (language === '' || language.includes(',') || language === '*') return false;
  const members = (Array.isArray(acceptLanguage) ? acceptLanguage.join(',') : acceptLanguage)
    .split(',')
    .map((member) => member.trim());
  const parsed = parseWeighted(members);
  if (parsed === undefined || parsed.length === 0) return false;
  const top = Math.max(...parsed.map((member) => member.q));
  const preferred = parsed.filter((member) => member.q === top);
  return top > 0 && preferred.length === 1 && preferred[0]?.name === language && preferred[0].params === '';
}
