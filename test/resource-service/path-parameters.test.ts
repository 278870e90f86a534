/**
 * Every path parameter the OpenAPI document declares with a pattern answers as the document
 * says when a value does not match it: 404 problem (ERR_NOT_FOUND), as an unknown resource, to
 * an admin who may read any customer, for every GET of the path. Never a 500 (a NUL byte that
 * PostgreSQL cannot store), never a 200. Values that match reach the data.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startTestService, type TestService } from '../support/service.ts';

let service: TestService;
let document: any;

beforeAll(async () => {
  service = await startTestService();
  document = (await rawRequest(service.url, 'GET', '/v1/openapi.json')).body;
});
afterAll(async () => {
  await service.close();
});

/** Values as they go in a path (percent-encoded), and as the pattern sees them (decoded). */
const CANDIDATES = [
  '-leading-dash',
  'x'.repeat(129),
  '%00',
  'a%20b',
  'caf%C3%A9',
  'ABCDEF01-2345-6789-ABCD-EF0123456789',
  'not-a-uuid',
];

interface PatternedParameter {
  path: string;
  name: string;
  pattern: RegExp;
  maxLength: number;
  description: string;
}

function patternedParameters(): PatternedParameter[] {
  const found: PatternedParameter[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const entry of item.parameters ?? []) {
      const parameter =
        entry.$ref === undefined ? entry : document.components.parameters[entry.$ref.split('/').at(-1)];
      if (parameter.in !== 'path' || parameter.schema.pattern === undefined) continue;
      found.push({
        path,
        name: parameter.name,
        pattern: new RegExp(parameter.schema.pattern),
        maxLength: parameter.schema.maxLength ?? Infinity,
        description: parameter.description,
      });
    }
  }
  return found;
}

const matches = (p: PatternedParameter, value: string) =>
  p.pattern.test(value) && value.length <= p.maxLength;

describe('path parameters with a pattern', () => {
  it('are declared on every templated path, with a pattern and what a miss answers', () => {
    const templated = Object.keys(document.paths).filter((path) => path.includes('{'));
    expect(templated.length).toBeGreaterThan(0);
    const declared = patternedParameters();
    expect(new Set(declared.map((p) => p.path))).toEqual(new Set(templated));
    for (const p of declared) expect(p.description, p.path).toMatch(/404/);
  });

  it('answer 404 problem to a value outside the pattern, on every GET of the path', async () => {
    const admin = service.admin();
    let checked = 0;
    for (const parameter of patternedParameters()) {
      if (document.paths[parameter.path].get === undefined) continue;
      for (const encoded of CANDIDATES) {
        if (matches(parameter, decodeURIComponent(encoded))) continue;
        const path = parameter.path.replace(`{${parameter.name}}`, encoded);
        const answer = await admin.request('GET', path);
        expect([answer.status, answer.body?.code], path).toEqual([404, 'ERR_NOT_FOUND']);
        expect(answer.headers.get('content-type')).toBe('application/problem+json');
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(20);
  });

  it('let a matching value through to the data', async () => {
    const customer = service.newCustomer('pp');
    const me = customer.principal.customerId;
    const created = await customer.request('POST', '/v1/orders', {
      body: { items: [{ sku: 'SKU-1', quantity: 1, unit_price: 100 }], currency: 'EUR' },
    });
    expect(created.status).toBe(201);
    for (const path of [
      `/v1/customers/${me}`,
      `/v1/customers/${me}/invoices`,
      `/v1/orders/${created.body.id}`,
    ]) {
      expect((await customer.request('GET', path)).status, path).toBe(200);
    }
  });
});
