/**
 * The resource service: a polka app whose every request passes, in order,
 *   request id → identity assertion → customer row → route handler,
 * and whose every error leaves as problem+json through one handler.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import polka from 'polka';
import type { Polka, Request, Response } from 'polka';
import type { Logger } from 'pino';
import type { Sql } from 'postgres';
import { HttpProblem, sendProblem } from '../shared/errors.ts';
import type { AssertionKey } from '../shared/identity-assertion.ts';
import type { Principal } from '../shared/principal.ts';
import { createCustomerRegistry } from './customers.ts';
import { createCursorCodec } from './http/cursor.ts';
import { authenticate } from './http/identity.ts';
import { NO_STORE, sendJson } from './http/respond.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { registerCustomerRoutes } from './routes/customers.ts';
import { registerOrderRoutes } from './routes/orders.ts';
import { registerPaymentRoutes } from './routes/payments.ts';
import { registerUserRoutes } from './routes/users.ts';
import type { RouteContext } from './routes/context.ts';

export interface ServiceOptions {
  sql: Sql;
  assertionKeys: readonly AssertionKey[];
  logger: Logger;
  /** Largest accepted request body, bytes. */
  maxBodyBytes?: number;
}

export interface ServiceRequest extends Request {
  requestId: string;
  principal: Principal;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

export function createServiceApp(options: ServiceOptions): Polka<ServiceRequest> {
  const { sql, logger } = options;
  const customers = createCustomerRegistry(sql);
  const context: RouteContext = {
    sql,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    cursors: createCursorCodec(options.assertionKeys.map((k) => k.secret)),
  };
  const openApi = JSON.stringify(buildOpenApiDocument());

  const app = polka<ServiceRequest>({
    onNoMatch: (req) => {
      throw new HttpProblem('ERR_ROUTE_NOT_FOUND', `Nothing is served at ${req.path}`);
    },
    onError: (error, req, res) => {
      const problem = toProblem(error);
      if (problem.status >= 500) {
        logger.error(
          { err: error, requestId: req.requestId, method: req.method, path: req.path },
          'request failed',
        );
      }
      sendProblem(res, problem, req.path);
    },
  });

  app.use((req, res, next) => {
    const given = req.headers['x-request-id'];
    req.requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    void next();
  });

  // Public: the API description, and the probe a load balancer uses.
  app.get('/v1/openapi.json', (_req, res) => {
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.end(openApi);
  });
  app.get('/healthz', async (_req, res) => {
    await sql`select 1`;
    sendJson(res, { status: 200, body: { status: 'ok' }, cache: NO_STORE });
  });

  app.use(async (req, _res, next) => {
    req.principal = authenticate(req, options.assertionKeys);
    await customers.ensure(req.principal.customerId);
    await next();
  });

  registerOrderRoutes(app, context);
  registerPaymentRoutes(app, context);
  registerCustomerRoutes(app, context);
  registerUserRoutes(app);
  return app;
}

function toProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error;
  const code = (error as { code?: unknown } | undefined)?.code;
  // 57014: statement timeout; 40001/40P01: serialization failure, deadlock. Retryable.
  if (code === '57014' || code === '40001' || code === '40P01') {
    return new HttpProblem('ERR_SERVICE_UNAVAILABLE', 'The database is busy; retry shortly', {
      headers: { 'Retry-After': '1' },
    });
  }
  return new HttpProblem('ERR_INTERNAL', 'The service failed to answer this request');
}

export interface RunningService {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** Starts the service on `port` (0 for any) and `host`. */
export async function startService(
  options: ServiceOptions & { port: number; host?: string },
): Promise<RunningService> {
  const app = createServiceApp(options);
  const server = createServer(
    {
      // Bounds that keep one slow or greedy client from holding the service.
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 65_000,
      maxHeaderSize: 16 * 1024,
    },
    app.handler as unknown as Parameters<typeof createServer>[1],
  );
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    server,
    url: `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`,
    close: () =>
      new Promise((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
}

export type { Response };
