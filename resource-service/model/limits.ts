/**
 * Bounds that the routes enforce and the OpenAPI document states, here so that both read the
 * same value without the document importing the routes.
 */

/**
 * Lower case only: PostgreSQL writes UUIDs so, and an upper-case alias would be a second path.
 * The OpenAPI document states the same pattern for path ids.
 */
export const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

/** Page size of a list when the request names none, and the largest it may name. */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
