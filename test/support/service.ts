/**
 * Starts the real resource service on port 0 against this run's PostgreSQL database, with a
 * fresh assertion key, and gives tests a client that speaks as any principal.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import type { Logger } from 'pino';
import type { Sql } from 'postgres';
import { inject } from 'vitest';
import { startService } from '../../resource-service/server.ts';
import { connectDatabase } from '../../resource-service/db/connect.ts';
import { IDENTITY_HEADER, signAssertion } from '../../shared/identity-assertion.ts';
import type { AssertionKey } from '../../shared/identity-assertion.ts';
import type { Principal } from '../../shared/principal.ts';

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is, instead of JSON-encoding `body`. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Override the signed assertion: a string is sent as is, null sends none. */
  assertion?: string | null;
}

export interface Client {
  principal: Principal;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
}

export interface TestService {
  url: string;
  sql: Sql;
  keys: AssertionKey[];
  as(principal: Partial<Principal> & { customerId: string }): Client;
  /** A customer with every non-admin scope, under a unique id. */
  newCustomer(prefix?: string): Client;
  admin(): Client;
  close(): Promise<void>;
}

export const ALL_CUSTOMER_SCOPES = ['orders:read', 'orders:write', 'payments:write', 'invoices:read'];

export async function rawRequest(
  url: string,
  method: string,
  path: string,
  options: RequestOptions & { assertionFor?: { key: AssertionKey; principal: Principal } } = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined = options.rawBody;
  if (body === undefined && options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  if (options.assertion !== undefined) {
    if (options.assertion !== null) headers[IDENTITY_HEADER] = options.assertion;
  } else if (options.assertionFor !== undefined) {
    headers[IDENTITY_HEADER] = signAssertion(options.assertionFor.key, options.assertionFor.principal, {
      method,
      target: path,
      requestId: randomUUID(),
    });
  }
  const response = await fetch(`${url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  let parsed: unknown = undefined;
  if (text !== '' && /json/.test(response.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed, text };
}

export async function startTestService(
  options: { maxBodyBytes?: number; logger?: Logger } = {},
): Promise<TestService> {
  const sql = connectDatabase({ url: inject('databaseUrl'), max: 25 });
  const keys: AssertionKey[] = [{ kid: 'test', secret: randomBytes(32) }];
  const service = await startService({
    sql,
    logger: options.logger ?? pino({ level: 'silent' }),
    assertionKeys: keys,
    port: 0,
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
  });
  const key = keys[0] as AssertionKey;

  const as = (partial: Partial<Principal> & { customerId: string }): Client => {
    const principal: Principal = {
      subject: partial.subject ?? `user-of-${partial.customerId}`,
      customerId: partial.customerId,
      scopes: partial.scopes ?? ALL_CUSTOMER_SCOPES,
      authMethod: partial.authMethod ?? 'jwt',
      ...(partial.keyId === undefined ? {} : { keyId: partial.keyId }),
    };
    return {
      principal,
      request: (method, path, opts = {}) =>
        rawRequest(service.url, method, path, { ...opts, assertionFor: { key, principal } }),
    };
  };

  return {
    url: service.url,
    sql,
    keys,
    as,
    newCustomer: (prefix = 'cus') => as({ customerId: `${prefix}_${randomBytes(6).toString('hex')}` }),
    admin: () => as({ customerId: `ops_${randomBytes(4).toString('hex')}`, scopes: ['admin'] }),
    close: async () => {
      await service.close();
      await sql.end({ timeout: 5 });
    },
  };
}

/** The body DESIGN.md says POST /v1/orders must accept. */
export const SAMPLE_ORDER = { items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }], currency: 'EUR' };
