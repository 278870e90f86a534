/**
 * Opaque, signed pagination cursors.
 *
 * A cursor carries the keyset position (sort key and id of the last row shown) and is bound
 * to the query it came from: the caller's customer, the sort and the filters. It is signed
 * with an HMAC, so a client can neither forge a position nor carry a cursor over to another
 * query or another customer (queries are scoped by customer anyway; this makes tampering a
 * clear 400 instead of a silent surprise).
 */
import type { HmacKey } from '../../shared/data-dir-secrets.ts';
import { HttpProblem } from '../../shared/errors.ts';
import { decodeMac, hmacSha256, macEquals } from '../../shared/hmac.ts';
import type { KeysetPosition } from '../data/keyset.ts';

/** Turns the data layer's keyset position into an opaque cursor, and back. */
export interface CursorCodec {
  encode(position: KeysetPosition, binding: string): string;
  decode(cursor: string, binding: string): KeysetPosition;
}

const TAG_BYTES = 16;

export function createCursorCodec(secrets: readonly Buffer[]): CursorCodec {
  const keys: HmacKey[] = secrets.map((secret, index) => ({ kid: String(index), secret }));
  const [signing] = keys;
  if (signing === undefined) throw new Error('cursor codec needs at least one secret');
  const tag = (key: HmacKey, payload: string, binding: string) =>
    hmacSha256(key, `cursor\0${binding}\0${payload}`).subarray(0, TAG_BYTES);

  return {
    encode(position, binding) {
      const payload = Buffer.from(JSON.stringify([position.at, position.id])).toString('base64url');
      return `${payload}.${tag(signing, payload, binding).toString('base64url')}`;
    },
    decode(cursor, binding) {
      const invalid = () =>
        new HttpProblem(
          'ERR_INVALID_CURSOR',
          'The cursor is malformed, tampered with, or from another query',
          {
            extensions: { errors: [{ parameter: 'cursor', detail: 'not a cursor this query issued' }] },
          },
        );
      const [payload, signature, extra] = cursor.split('.');
      if (payload === undefined || signature === undefined || extra !== undefined || cursor.length > 512) {
        throw invalid();
      }
      const given = decodeMac(signature);
      // Any key of the ring verifies, so cursors survive a key rotation.
      const valid = given !== undefined && keys.some((key) => macEquals(given, tag(key, payload, binding)));
      if (!valid) throw invalid();
      const decoded: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      if (!Array.isArray(decoded) || typeof decoded[0] !== 'string' || typeof decoded[1] !== 'string') {
        throw invalid();
      }
      return { at: decoded[0], id: decoded[1] };
    },
  };
}
