/**
 * The audiences the external identity provider (external-idp-server.ts) mints tokens for: the
 * gateway's API, and another API's. A module of their own, so that a test can name them
 * without importing the server script, which starts a provider wherever it is imported.
 */
export const AUDIENCE = 'https://api.portico.test';
export const OTHER_AUDIENCE = 'https://other.api.test';
