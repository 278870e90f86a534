/**
 * One token, one spelling. A compact JWS can be re-spelt without its signer: base64url leaves
 * spare bits in a segment's last character (any value decodes to the same bytes), and an ECDSA
 * signature (r, s) verifies as (r, n - s) too. Each spelling is a new string, so without this
 * each missed the verified-token cache and cost a full verify.
 *
 * A segment with non-zero spare bits is refused: no signer emits one. The two S values cannot
 * be refused (signers emit either), so the cache also keys a token by its low-S form.
 */

/** The group orders of the curves of ES256, ES384 and ES512. */
const CURVE_ORDERS: Readonly<Record<string, { n: bigint; bytes: number }>> = {
  ES256: { n: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n, bytes: 32 },
  ES384: {
    n: 0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973n,
    bytes: 48,
  },
  ES512: {
    n: 0x01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffa51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409n,
    bytes: 66,
  },
};

/** True when every segment is the one base64url spelling of its bytes (no spare bits set). */
export function canonicalSegments(token: string): boolean {
  for (const segment of token.split('.')) {
    if (Buffer.from(segment, 'base64url').toString('base64url') !== segment) return false;
  }
  return true;
}

/**
 * The token with its ECDSA signature's S as the lower of s and n - s; the token itself for
 * any other algorithm, or a signature not of the curve's length (verify refuses it anyway).
 */
export function lowSForm(token: string, alg: string): string {
  const curve = CURVE_ORDERS[alg];
  if (curve === undefined) return token;
  const dot = token.lastIndexOf('.');
  const signature = Buffer.from(token.slice(dot + 1), 'base64url');
  if (signature.length !== curve.bytes * 2) return token;
  const s = BigInt(`0x${signature.subarray(curve.bytes).toString('hex')}`);
  if (s <= curve.n >> 1n) return token;
  const low = Buffer.from((curve.n - s).toString(16).padStart(curve.bytes * 2, '0'), 'hex');
  return `${token.slice(0, dot + 1)}${Buffer.concat([signature.subarray(0, curve.bytes), low]).toString('base64url')}`;
}
