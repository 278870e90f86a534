/**
 * The compatibility gate: the document the service serves keeps every promise of the committed
 * v1 baseline (docs/openapi-v1.baseline.json), and the gate, run as users run it, exits 1
 * naming each kind of breaking change (a removed path first of all) and 0 for additions.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { breakingChanges } from '../../scripts/api-compat/breaking-changes.ts';
import type { Json } from '../../scripts/api-compat/schema-compat.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const BASELINE = join(ROOT, 'docs/openapi-v1.baseline.json');
const baseline = JSON.parse(readFileSync(BASELINE, 'utf8')) as Json;
const dir = mkdtempSync(join(tmpdir(), 'portico-api-compat-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function gate(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['scripts/api-compat.ts', ...args], { cwd: ROOT }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr }),
    );
  });
}

/** The baseline, changed by `edit`, written where the gate can read it. */
function candidate(name: string, edit: (doc: Json & { paths: Json; components: Json }) => void): string {
  const doc = structuredClone(baseline) as Json & { paths: Json; components: Json };
  edit(doc);
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

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

  it('is kept by the document the service serves now (npm run -s api:compat -- BASELINE --live)', async () => {
    const result = await gate(BASELINE, '--live');
    expect(result.stdout).not.toMatch(/^breaking:/m);
    expect(result.code).toBe(0);
  });
});

describe('breaking changes fail the gate, each named', () => {
  it('a removed path', async () => {
    const file = candidate('removed-path', (doc) => delete paths(doc)['/v1/payments']);
    const result = await gate(BASELINE, file);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('breaking: /v1/payments: removed path\n');
  });

  it('every kind at once, one line each', async () => {
    const file = candidate('everything', (doc) => {
      delete paths(doc)['/v1/orders/{id}']!['delete'];
      delete schemas(doc)['Order']!.properties['total'];
      schemas(doc)['Order']!.properties['status']!.enum!.pop();
      const input = schemas(doc)['OrderInput']!;
      input.properties['note'] = { type: 'string' } as Schema;
      input.required = [...(input.required ?? []), 'note'];
      schemas(doc)['PaymentInput']!.properties['amount']!.type = 'string';
      paths(doc)['/v1/orders']!['get']!['parameters']!.push({
        name: 'region',
        in: 'query',
        required: true,
        schema: { type: 'string' },
      });
    });
    const result = await gate(BASELINE, file);
    expect(result.code).toBe(1);
    const lines = result.stdout.split('\n');
    for (const expected of [
      'breaking: DELETE /v1/orders/{id}: removed operation',
      'breaking: GET /v1/orders/{id}: response 200 (application/json) total: removed response field',
      'breaking: GET /v1/orders: response 200 (application/json) data[].total: removed response field',
      'breaking: GET /v1/orders/{id}: response 200 (application/json) status: removed enum value "cancelled"',
      'breaking: POST /v1/orders: request body (application/json) note: new required request field',
      'breaking: POST /v1/payments: request body (application/json) amount: narrowed type: integer → string',
      'breaking: GET /v1/orders: new required query parameter region',
    ])
      expect(lines).toContain(expected);
    expect(result.stdout).toMatch(/^api:compat: \d+ breaking changes$/m);
  });

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
  it('a new path, an optional request field, a response field, a response enum value, a widened request type', async () => {
    const file = candidate('additions', (doc) => {
      paths(doc)['/v1/refunds'] = structuredClone(paths(doc)['/v1/payments']!);
      schemas(doc)['OrderInput']!.properties['note'] = { type: 'string' } as Schema;
      schemas(doc)['Order']!.properties['note'] = { type: 'string' } as Schema;
      schemas(doc)['Order']!.properties['status']!.enum!.push('lost');
      schemas(doc)['PaymentInput']!.properties['amount']!.type = ['integer', 'null'];
    });
    const result = await gate(BASELINE, file);
    expect(result.stdout).toBe(`api:compat: no breaking change from ${BASELINE} to ${file}\n`);
    expect(result.code).toBe(0);
  });

  it('a renamed path parameter is the same path', () => {
    const next = structuredClone(baseline) as { paths: Json };
    const item = paths(next)['/v1/orders/{id}']!;
    delete paths(next)['/v1/orders/{id}'];
    paths(next)['/v1/orders/{order_id}'] = item;
    expect(breakingChanges(baseline, next as Json)).toEqual([]);
  });
});

describe('bad input', () => {
  it('exits 2 for a file that is not an OpenAPI 3 document, or a missing argument', async () => {
    const notOpenApi = join(dir, 'not.json');
    writeFileSync(notOpenApi, '{"swagger":"2.0"}');
    expect((await gate(BASELINE, notOpenApi)).code).toBe(2);
    expect((await gate(BASELINE, join(dir, 'missing.json'))).code).toBe(2);
    expect((await gate(BASELINE)).code).toBe(2);
  });
});
