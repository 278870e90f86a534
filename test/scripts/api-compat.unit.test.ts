/**
 * The compatibility gate's rules (scripts/api-compat/), on the committed v1 baseline
 * (docs/openapi-v1.baseline.json) and edits of it, called as functions. test/e2e/api-compat.test.ts
 * runs the gate as users run it, against the document the service serves.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { breakingChanges } from '../../scripts/api-compat/breaking-changes.ts';
import type { Json } from '../../scripts/api-compat/schema-compat.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const BASELINE = join(ROOT, 'docs/openapi-v1.baseline.json');
const baseline = JSON.parse(readFileSync(BASELINE, 'utf8')) as Json;

// Typed reach into the baseline, for edits.
type Schema = {
  properties: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  type?: unknown;
  maximum?: number;
};
const schemas = (doc: { components: Json }) => doc.components['schemas'] as Record<string, Schema>;
const paths = (doc: { paths: Json }) =>
  doc.paths as Record<string, Record<string, Record<string, unknown[]>>>;

describe('the committed v1 baseline', () => {
  it('is an OpenAPI 3.1 document of the /v1 API', () => {
    expect(baseline['openapi']).toBe('3.1.0');
    const keys = Object.keys(baseline['paths'] as Json);
    expect(keys.length).toBeGreaterThan(5);
    for (const path of keys) expect(path).toMatch(/^\/v1\//);
  });
});

describe('breaking changes fail the gate, each named', () => {
  it('a removed query parameter (the API answers unknown ones with 400)', () => {
    const next = structuredClone(baseline) as { paths: Json };
    const list = paths(next)['/v1/orders']!['get']!;
    list['parameters'] = list['parameters']!.filter((p) => (p as { name?: string }).name !== 'sort');
    expect(breakingChanges(baseline, next as Json)).toContainEqual({
      where: 'GET /v1/orders',
      what: 'removed query parameter sort',
    });
  });

  it('narrowed bounds of a request field, and a field that stops being always present', () => {
    const next = structuredClone(baseline);
    schemas(next as { components: Json })['PaymentInput']!.properties['amount']!.maximum = 5;
    const order = schemas(next as { components: Json })['Order']!;
    order.required = (order.required ?? []).filter((name) => name !== 'currency');
    const found = breakingChanges(baseline, next).map((c) => `${c.where}: ${c.what}`);
    expect(found).toContain(
      'POST /v1/payments: request body (application/json) amount: narrowed: maximum lowered to 5',
    );
    expect(found).toContain(
      'GET /v1/orders/{id}: response 200 (application/json) currency: response field no longer always present',
    );
  });
});

describe('alternatives (anyOf / oneOf)', () => {
  const nextCursor = (doc: Json) =>
    schemas(doc as { components: Json })['OrderList']!.properties as unknown as Record<string, unknown>;

  it('a response field of [string, null] that becomes an integer has changed type', () => {
    const next = structuredClone(baseline);
    nextCursor(next)['next_cursor'] = { type: 'integer' };
    expect(breakingChanges(baseline, next).map((c) => c.what)).toContain(
      'response 200 (application/json) next_cursor: changed type: string|null → integer',
    );
  });

  it('one that is never null any more breaks no reader', () => {
    const next = structuredClone(baseline);
    nextCursor(next)['next_cursor'] = { type: 'string' };
    expect(breakingChanges(baseline, next)).toEqual([]);
  });

  it('a branch whose type changed is found, compared with the branch in its place', () => {
    const next = structuredClone(baseline);
    const field = nextCursor(next)['next_cursor'] as { anyOf: { type: string; maxLength?: number }[] };
    field.anyOf[0]!.type = 'integer';
    expect(breakingChanges(baseline, next).length).toBeGreaterThan(0);
  });
});

describe('additions pass the gate', () => {
  it('a renamed path parameter is the same path', () => {
    const next = structuredClone(baseline) as { paths: Json };
    const item = paths(next)['/v1/orders/{id}']!;
    delete paths(next)['/v1/orders/{id}'];
    paths(next)['/v1/orders/{order_id}'] = item;
    expect(breakingChanges(baseline, next as Json)).toEqual([]);
  });
});
