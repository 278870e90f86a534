/**
 * The answers derived from the route table: OPTIONS and 405 with the Allow list each path had
 * when it was written by hand, HEAD wherever GET is, and an OpenAPI operation for every method
 * a path allows (and none it does not).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, SAMPLE_ORDER, startTestService } from '../support/service.ts';
import type { TestService } from '../support/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service.close();
});

const SOME_ID = '00000000-0000-4000-8000-000000000000';

/** Path as requested, its OpenAPI template, its Allow list, and a method it refuses. */
const PATHS = [
  ['/v1/orders', '/v1/orders', 'GET, HEAD, POST, OPTIONS', 'PUT'],
  [`/v1/orders/${SOME_ID}`, '/v1/orders/{id}', 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS', 'POST'],
  ['/v1/payments', '/v1/payments', 'POST, OPTIONS', 'GET'],
  [`/v1/payments/${SOME_ID}`, '/v1/payments/{id}', 'GET, HEAD, OPTIONS', 'DELETE'],
  ['/v1/customers/{me}', '/v1/customers/{customer_id}', 'GET, HEAD, OPTIONS', 'PATCH'],
  ['/v1/customers/{me}/invoices', '/v1/customers/{customer_id}/invoices', 'GET, HEAD, OPTIONS', 'POST'],
  ['/v1/users/me', '/v1/users/me', 'GET, HEAD, OPTIONS', 'DELETE'],
] as const;

describe('the route table', () => {
  it.each(PATHS)(
    '%s: OPTIONS is 204 with Allow, HEAD follows GET, others are 405',
    async (template, _doc, allow, refused) => {
      const client = service.newCustomer();
      const path = template.replace('{me}', client.principal.customerId);

      const options = await client.request('OPTIONS', path);
      expect(options.status).toBe(204);
      expect(options.headers.get('allow')).toBe(allow);
      expect(options.headers.get('cache-control')).toBe('no-store');

      const wrong = await client.request(refused, path, refused === 'GET' ? {} : { body: {} });
      expect(wrong.status).toBe(405);
      expect(wrong.headers.get('allow')).toBe(allow);
      expect(wrong.body.code).toBe('ERR_METHOD_NOT_ALLOWED');

      if (allow.includes('GET')) {
        const get = await client.request('GET', path);
        const head = await client.request('HEAD', path);
        expect(head.status).toBe(get.status);
        expect(head.status).not.toBe(405);
      }
    },
  );

  it('describes in OpenAPI exactly the methods each path allows', async () => {
    const { body } = await rawRequest(service.url, 'GET', '/v1/openapi.json');
    for (const [, doc, allow] of PATHS) {
      const described = Object.keys(body.paths[doc])
        .filter((key) => key !== 'parameters')
        .map((method) => method.toUpperCase());
      const served = allow.split(', ').filter((method) => method !== 'HEAD' && method !== 'OPTIONS');
      expect(described, doc).toEqual(served);
    }
  });

  it('serves each path under one spelling only, even to a caller with a valid assertion', async () => {
    const client = service.as({ customerId: `cus:${SOME_ID.slice(0, 8)}${Date.now()}` });
    const me = client.principal.customerId;
    const created = await client.request('POST', '/v1/orders', { body: SAMPLE_ORDER });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const canonical = [`/v1/orders/${id}`, `/v1/customers/${me}/invoices`, '/v1/orders', '/v1/users/me'];
    for (const path of canonical) expect((await client.request('GET', path)).status, path).toBe(200);
    const aliases = [
      '/v1/ORDERS',
      '/v1/orders/',
      '/v1//orders',
      '/v1/%6Frders',
      `/v1/Orders/${id}`,
      `/v1/orders/${id}/`,
      `/v1/customers/${me.replace(':', '%3A')}/invoices`,
      `/v1/customers/${me}/INVOICES`,
      '/v1/users/me/',
      '/v1/OPENAPI.JSON',
      '/v1/openapi.json/',
    ];
    for (const path of aliases) {
      const alias = await client.request('GET', path);
      expect(alias.status, path).toBe(404);
      expect(alias.body.code, path).toBe('ERR_ROUTE_NOT_FOUND');
    }
    const upper = await client.request('GET', `/v1/orders/${id.toUpperCase()}`);
    expect(upper.status).toBe(404);
    expect(upper.body.code).toBe('ERR_NOT_FOUND');
  });

  it('answers the public OpenAPI document at one URL: a query string is refused, not stored again', async () => {
    expect((await rawRequest(service.url, 'GET', '/v1/openapi.json')).status).toBe(200);
    const flush = await rawRequest(service.url, 'GET', '/v1/openapi.json?flush=1');
    expect(flush.status).toBe(400);
    expect(flush.body.code).toBe('ERR_INVALID_PARAMETER');
    expect(flush.headers.get('cache-control')).toBe('no-store');
    expect((await rawRequest(service.url, 'GET', '/v1/openapi.json?&&')).status).toBe(400);
  });
});
