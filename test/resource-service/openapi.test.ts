import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startTestService } from '../support/service.ts';
import type { TestService } from '../support/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service.close();
});

describe('OpenAPI document', () => {
  it('is served without credentials and is a valid OpenAPI 3.1 document', async () => {
    const res = await rawRequest(service.url, 'GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(res.body));
    expect(result.valid ? [] : result.errors).toEqual([]);
  });

  it('describes every route the service answers', async () => {
    const { body } = await rawRequest(service.url, 'GET', '/v1/openapi.json');
    expect(Object.keys(body.paths).sort()).toEqual(
      [
        '/v1/customers/{customer_id}',
        '/v1/customers/{customer_id}/invoices',
        '/v1/orders',
        '/v1/orders/{id}',
        '/v1/payments',
        '/v1/payments/{id}',
        '/v1/users/me',
        // Public: the document describes itself and the reference rendered from it.
        '/v1/openapi.json',
        '/v1/docs',
      ].sort(),
    );
    for (const path of ['/v1/openapi.json', '/v1/docs']) {
      expect(Object.keys(body.paths[path]), path).toEqual(['get']);
      expect(body.paths[path].get.security, path).toEqual([]);
    }
    // The request schema is the validator's schema: read-only fields are not in it.
    expect(Object.keys(body.components.schemas.OrderInput.properties).sort()).toEqual(['currency', 'items']);
    expect(body.components.schemas.OrderInput.additionalProperties).toBe(false);
  });
});
