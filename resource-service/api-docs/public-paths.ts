/**
 * The paths anyone may read without a credential, described in the document they serve: the
 * OpenAPI document itself and the API reference rendered from it. The service answers them
 * before the identity assertion (app.ts); the gateway's default routes make them public.
 */
import { API_REFERENCE_CSP, API_REFERENCE_PATH } from './api-reference.ts';
import type { Json } from '../openapi/components.ts';
import { badRequest, headerRef, responseRef } from '../openapi/components.ts';

export const OPENAPI_PATH = '/v1/openapi.json';

/** Public answers are counted by the gateway's limits per client address, like any other. */
const publicHeaders = {
  'Cache-Control': {
    description: 'The same for every caller: shared caches, the gateway included, may keep it five minutes.',
    required: true,
    schema: { type: 'string', const: 'public, max-age=300' },
  },
  RateLimit: headerRef('RateLimit'),
  'RateLimit-Policy': headerRef('RateLimitPolicy'),
};

/** A public read: no credential, 400 for a query string, and the gateway's own refusals. */
const publicRead = (operation: Json): Json => ({
  get: {
    ...operation,
    tags: ['reference'],
    security: [],
    responses: {
      ...(operation['responses'] as Json),
      '304': {
        description: 'Not modified: the If-None-Match tag still matches. No body.',
        headers: publicHeaders,
      },
      '400': badRequest('ERR_INVALID_PARAMETER'),
      '429': responseRef('TooManyRequests'),
      '500': responseRef('InternalError'),
      '502': responseRef('BadGateway'),
      '503': responseRef('ServiceUnavailable'),
      '504': responseRef('GatewayTimeout'),
    },
  },
});

export const PUBLIC_TAG = {
  name: 'reference',
  description: 'The description of this API, readable without a credential.',
};

export const publicPaths = (): Json => ({
  [OPENAPI_PATH]: publicRead({
    operationId: 'getOpenApiDocument',
    summary: 'This OpenAPI document',
    description: 'The OpenAPI 3.1 description of the API, as JSON. Takes no query parameters.',
    responses: {
      '200': {
        description: 'This document.',
        headers: publicHeaders,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['openapi', 'info', 'paths'],
              properties: { openapi: { type: 'string', const: '3.1.0' } },
            },
          },
        },
      },
    },
  }),
  [API_REFERENCE_PATH]: publicRead({
    operationId: 'getApiReference',
    summary: 'The API reference, as a web page',
    description: `This document rendered for people (Swagger UI, served by the service with its assets under \`${API_REFERENCE_PATH}/\`). The page loads nothing from other hosts: its Content-Security-Policy allows this origin only.`,
    responses: {
      '200': {
        description: 'The page.',
        headers: {
          ...publicHeaders,
          'Content-Security-Policy': {
            description: 'Scripts, styles and connections from this origin only.',
            required: true,
            schema: { type: 'string', const: API_REFERENCE_CSP },
          },
        },
        content: { 'text/html': { schema: { type: 'string', maxLength: 4096 } } },
      },
    },
  }),
});
