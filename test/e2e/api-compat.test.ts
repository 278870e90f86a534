/**
 * The compatibility gate: the document the service serves keeps every promise of the committed
 * v1 baseline (docs/openapi-v1.baseline.json), and the gate, run as users run it, exits 1
 * naming each kind of breaking change (a removed path first of all) and 0 for additions. The
 * rules called as functions: test/scripts/api-compat.unit.test.ts.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
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
