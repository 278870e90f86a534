/**
 * The request id both processes accept from a client (and the service from the gateway): long
 * enough for UUIDs and trace ids, narrow enough to be safe in logs and headers. Anything else
 * is replaced by a fresh id, never refused, because the id is ours to choose.
 */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** True when `value` may be kept as the request id. */
export function isWellFormedRequestId(value: unknown): value is string {
  return typeof value === 'string' && REQUEST_ID_PATTERN.test(value);
}
