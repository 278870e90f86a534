/**
 * Starts the real resource service on port 0 against this run's PostgreSQL database, with a
 * fresh assertion key, and gives tests a client that speaks as any principal.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import type { Logger } from 'pino';
import type { Sql } from 'postgres';
import type { Dispatcher } from 'undici';
import { fetch as undiciFetch } from 'undici';
import { inject } from 'vitest';
import { startService } from '../../resource-service/server.ts';
import { connectDatabase } from '../../resource-service/db/connect.ts';
import type { RunningService } from '../../resource-service/server.ts';
import type { ServiceTlsFiles } from '../../resource-service/tls.ts';
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
  /** The connection to use (a mutual-TLS agent for a service started with `tls`). */
  dispatcher?: Dispatcher;
}

export interface Client {
  principal: Principal;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
}

export interface TestService {
  url: string;
  service: RunningService;
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
  const init = { method, headers, ...(body === undefined ? {} : { body }) };
  const response =
    options.dispatcher === undefined
      ? await fetch(`${url}${path}`, init)
      : ((await undiciFetch(`${url}${path}`, {
          ...init,
          dispatcher: options.dispatcher,
        })) as unknown as Response);
  const text = await response.text();
  let parsed: unknown = undefined;
  if (text !== '' && /json/.test(response.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed, text };
}

/**
 * The service on port 0: plain HTTP unless `tls` is given (an explicit choice of these tests,
 * which are about the service's behaviour, not its transport; test/resource-service/mutual-tls
 * covers that), HTTPS, and mutual TLS with `tls.clientCaFile`. `dispatcher` is used by the
 * clients of `as()`.
 */
export async function startTestService(
  options: { maxBodyBytes?: number; logger?: Logger; tls?: ServiceTlsFiles; dispatcher?: Dispatcher } = {},
): Promise<TestService> {
  const sql = connectDatabase({ url: inject('databaseUrl'), max: 25 });
  const keys: AssertionKey[] = [{ kid: 'test', secret: randomBytes(32) }];
  const service = await startService({
    sql,
    logger: options.logger ?? pino({ level: 'silent' }),
    assertionKeys: keys,
    port: 0,
    ...(options.tls === undefined ? {} : { tls: options.tls }),
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
        rawRequest(service.url, method, path, {
          ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
          ...opts,
          assertionFor: { key, principal },
        }),
    };
  };

  return {
    url: service.url,
    service,
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
