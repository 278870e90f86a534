/**
 * The whole product in-process: the real resource service on this run's PostgreSQL, and a
 * real gateway in front of it over HTTPS, with the development issuer of a temporary data dir
 * signing real tokens. What a client of `npm start` talks to, on port 0.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { inject } from 'vitest';
import { loadAssertionKeys } from '../../../shared/assertion-keys.ts';
import { startService } from '../../../resource-service/server.ts';
import type { RunningService } from '../../../resource-service/server.ts';
import { connectDatabase } from '../../../resource-service/db/connect.ts';
import { parseConfig } from '../../../gateway/config/load.ts';
import { loadOrCreateDevIssuer } from '../../../gateway/identity/dev-issuer.ts';
import { createLogger } from '../../../gateway/observability/logger.ts';
import { startGateway } from '../../../gateway/start.ts';
import type { Gateway } from '../../../gateway/start.ts';
import { createTestCertificate } from '../../support/tls.ts';

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: any;
}

export interface Portico {
  gateway: Gateway;
  service: RunningService;
  dataDir: string;
  auditLog: string;
  /** The gateway's certificate, PEM: the CA a raw TLS client trusts. */
  ca: string;
  /** A real RFC 9068 token from the data dir's development issuer. */
  token(customerId: string, options?: { scopes?: string[]; ttl?: number; subject?: string }): Promise<string>;
  call(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Reply>;
  close(): Promise<void>;
}

const CUSTOMER_SCOPES = ['orders:read', 'orders:write', 'payments:write', 'invoices:read'];

export async function startPortico(
  options: {
    /** Config on top of the one `/v1` route; a function gets the service's URL, for routes of its own. */
    config?: Record<string, unknown> | ((serviceUrl: string) => Record<string, unknown>);
    redis?: Redis;
    dataDir?: string;
  } = {},
): Promise<Portico> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'portico-e2e-'));
  const assertionKeys = loadAssertionKeys({}, dataDir);
  const sql = connectDatabase({ url: inject('databaseUrl'), max: 10 });
  const service = await startService({ sql, assertionKeys, logger: pino({ level: 'silent' }), port: 0 });
  const certificate = await createTestCertificate();
  const { config } = parseConfig({
    routes: [{ prefix: '/v1', upstream: service.url, cache: true }],
    ...(typeof options.config === 'function' ? options.config(service.url) : options.config),
    listener: { tls: { certFile: certificate.certFile, keyFile: certificate.keyFile } },
  });
  const auditLog = join(dataDir, 'audit.log');
  const gateway = await startGateway(config, {
    log: createLogger({ level: 'silent' }),
    port: 0,
    adminPort: 0,
    dataDir,
    assertionKeys,
    auditLogPath: auditLog,
    env: {},
    ...(options.redis === undefined ? {} : { redis: options.redis }),
  });
  const issuer = loadOrCreateDevIssuer(dataDir);
  const agent = new Agent({ connect: { ca: certificate.cert, servername: 'localhost' } });
  const origin = `https://localhost:${gateway.addresses.https.port}`;

  return {
    gateway,
    service,
    dataDir,
    auditLog,
    ca: certificate.cert,
    token: (customerId, o = {}) =>
      issuer.sign(
        {
          sub: o.subject ?? `user-of-${customerId}`,
          customer_id: customerId,
          scope: (o.scopes ?? CUSTOMER_SCOPES).join(' '),
          client_id: 'e2e',
        },
        o.ttl ?? 300,
      ),
    async call(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.token !== undefined) headers['authorization'] = `Bearer ${o.token}`;
      if (o.body !== undefined) headers['content-type'] ??= 'application/json';
      const response = await request(`${origin}${path}`, {
        method: method as 'GET',
        headers,
        dispatcher: agent,
        ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }),
      });
      const text = await response.body.text();
      const flat: Record<string, string> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      return {
        status: response.statusCode,
        headers: flat,
        body: text !== '' && /json/.test(flat['content-type'] ?? '') ? JSON.parse(text) : text,
      };
    },
    async close() {
      await gateway.close();
      await agent.close();
      await service.close();
      await sql.end({ timeout: 5 });
      if (options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
