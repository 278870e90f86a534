/**
 * Which encoding the gateway sends a client: br, gzip or identity, from its Accept-Encoding
 * (RFC 9110 section 12.5.3). The answer is one of three tokens, so that the cache keeps at
 * most three variants of a resource however clients spell the field.
 *
 * Our own reader rather than `negotiator`: that one breaks ties between equal weights by the
 * client's order, so Chrome's `gzip, deflate, br, zstd` would get gzip; and this runs on every
 * request, where a memo of the few distinct values clients send makes it a map lookup.
 */

/** What the gateway may send; `identity` is no content coding. */
export type ResponseEncoding = 'br' | 'gzip' | 'identity';

/** Best first: on equal weights the smaller result wins. */
const PREFERENCE: readonly ResponseEncoding[] = ['br', 'gzip', 'identity'];
/** Distinct field values remembered; a client inventing new ones only empties the memo. */
const MEMO_LIMIT = 512;
const memo = new Map<string, ResponseEncoding>();

/**
 * The encoding for a request's Accept-Encoding. Absent: identity (a client that does not ask
 * gets no compression, whatever RFC 9110 allows: Kong #12796 served gzip to such clients).
 * When nothing is acceptable, identity too (section 12.5.3 prefers that to a 406).
 */
export function preferredEncoding(acceptEncoding: string | undefined): ResponseEncoding {
  if (acceptEncoding === undefined) return 'identity';
  const known = memo.get(acceptEncoding);
  if (known !== undefined) return known;
  const chosen = choose(weights(acceptEncoding));
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(acceptEncoding, chosen);
  return chosen;
}

/** Coding name (lower case) → weight, as listed; `x-gzip` read as gzip (8.4.1.3). */
function weights(value: string): Map<string, number> {
  const listed = new Map<string, number>();
  for (const member of value.split(',')) {
    const [rawName = '', ...parameters] = member.split(';');
    let name = rawName.trim().toLowerCase();
    if (name === '') continue;
    if (name === 'x-gzip') name = 'gzip';
    const weight = qvalue(parameters);
    if (weight !== undefined && !listed.has(name)) listed.set(name, weight);
  }
  return listed;
}

/** The `q` parameter (1 when absent), or undefined when it is not a qvalue (the member is ignored). */
function qvalue(parameters: readonly string[]): number | undefined {
  for (const parameter of parameters) {
    const [key = '', raw = ''] = parameter.split('=');
    if (key.trim().toLowerCase() !== 'q') continue;
    const text = raw.trim();
    return /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(text) ? Number(text) : undefined;
  }
  return 1;
}

function choose(listed: Map<string, number>): ResponseEncoding {
  const star = listed.get('*');
  const weightOf = (encoding: ResponseEncoding): number => {
    const own = listed.get(encoding);
    if (own !== undefined) return own;
    if (encoding !== 'identity') return star ?? 0;
    // Identity is acceptable unless excluded by identity;q=0 or *;q=0, and then only just:
    // any coding the client listed with a weight wins over it.
    return star === 0 ? 0 : 0.0001;
  };
  let best: ResponseEncoding = 'identity';
  let bestWeight = 0;
  for (const encoding of PREFERENCE) {
    const weight = weightOf(encoding);
    if (weight > bestWeight) {
      best = encoding;
      bestWeight = weight;
    }
  }
  return best;
}
