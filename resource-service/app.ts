/**
 * The resource service as a polka app. Every request passes, in order,
 *   request id → canonical path → public routes (OpenAPI document, API reference, health) → identity
 *   assertion → customer row → the route table,
 * and every error leaves as problem+json through one handler and one mapping (http/problems.ts).
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type PolkaModule from 'polka';
import type { Polka } from 'polka';
import type { Logger } from 'pino';
import type { Sql } from 'postgres';
import { isCanonicalPath } from '../shared/canonical-path.ts';
import { HttpProblem, sendProblem } from '../shared/errors.ts';
import { EXCHANGE_ID_HEADER, isWellFormedExchangeId } from '../shared/exchange-id.ts';
import type { AssertionKey } from '../shared/identity-assertion.ts';
import { isWellFormedRequestId } from '../shared/request-id.ts';
import { API_REFERENCE_PATH, loadApiReference, sendApiReference } from './api-docs/api-reference.ts';
import { createCustomerRegistry } from './data/customers.ts';
import { createCursorCodec } from './http/cursor.ts';
import { authenticate } from './http/identity.ts';
import { toProblem } from './http/problems.ts';
import type { ServiceRequest } from './http/request.ts';
import { NO_STORE, sendJson } from './http/respond.ts';
import { buildOpenApiDocument } from './api-docs/document.ts';
import { OPENAPI_PATH } from './api-docs/public-paths.ts';
import type { RouteContext } from './routes/context.ts';
import { answerOtherMethods, exactPattern, registerRoutes } from './routes/register.ts';
import { ROUTE_TABLE } from './routes/table.ts';

/**
 * polka's CommonJS build, its package's `require` export: its ESM build imports node:http, which
 * loads Node's bundled undici into the process (shared/node-http.ts says what that costs).
 */
const polka = createRequire(import.meta.url)('polka') as typeof PolkaModule;

export interface ServiceOptions {
  sql: Sql;
  assertionKeys: readonly AssertionKey[];
  logger: Logger;
  /** Largest accepted request body, bytes. */
  maxBodyBytes?: number;
}

const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

export function createServiceApp(options: ServiceOptions): Polka<ServiceRequest> {
  const { sql, logger } = options;
  const customers = createCustomerRegistry(sql);
  const context: RouteContext = {
    sql,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    cursors: createCursorCodec(options.assertionKeys.map((k) => k.secret)),
  };

  const app = polka<ServiceRequest>({
    onNoMatch: (req) => {
      throw new HttpProblem('ERR_ROUTE_NOT_FOUND', `Nothing is served at ${req.path}`);
    },
    onError: (error, req, res) => {
      const problem = toProblem(error);
      if (problem.status === 503) {
        // Expected while the database is away: one line per request, no stack.
        const code = (error as { code?: unknown }).code;
        logger.warn({ code, requestId: req.requestId, method: req.method, path: req.path }, problem.detail);
      } else if (problem.status >= 500) {
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
    req.requestId = isWellFormedRequestId(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    // Echoed on every answer, errors included, before anything can answer: the gateway takes
    // an answer only with the id of the request it sent (gateway/upstream/answer-binding.ts).
    const exchangeId = req.headers[EXCHANGE_ID_HEADER];
    if (isWellFormedExchangeId(exchangeId)) res.setHeader(EXCHANGE_ID_HEADER, exchangeId);
    void next();
  });

  // One spelling per path (shared/canonical-path.ts): the gateway refuses the others before
  // limiting or caching them, and so does the service, which may be reached by another way.
  app.use((req, _res, next) => {
    if (!isCanonicalPath(req.path))
      throw new HttpProblem('ERR_ROUTE_NOT_FOUND', 'Nothing is served at this spelling of a path');
    void next();
  });

  // Public: the API description, and the probe a load balancer uses.
  registerPublicDocuments(app);
  app.get(exactPattern('/healthz'), async (_req, res) => {
    await sql`select 1`;
    sendJson(res, { status: 200, body: { status: 'ok' }, cache: NO_STORE });
  });

  app.use(async (req, _res, next) => {
    req.principal = authenticate(req, options.assertionKeys, logger);
    await customers.ensure(req.principal.customerId);
    await next();
  });

  registerRoutes(app, ROUTE_TABLE, context);
  return app;
}

/** The OpenAPI document and the API reference rendered from it: read-only, for anyone. */
function registerPublicDocuments(app: Polka<ServiceRequest>): void {
  const openApi = JSON.stringify(buildOpenApiDocument());
  const reference = loadApiReference();
  app.get(exactPattern(OPENAPI_PATH), (req, res) => {
    // A public, cached document: a query string it ignored would be one more stored copy
    // per value, for anyone to fill the gateway's cache with.
    if ((req.search ?? '') !== '')
      throw new HttpProblem('ERR_INVALID_PARAMETER', 'the OpenAPI document takes no query parameters');
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.end(openApi);
  });
  for (const [path, asset] of reference) {
    app.get(exactPattern(path), (req, res) => sendApiReference(req, res, asset));
  }
  // Read-only: any other method is a 405 here, before the assertion a public path never carries.
  for (const path of [OPENAPI_PATH, ...reference.keys()]) {
    answerOtherMethods(app, exactPattern(path), 'GET, HEAD, OPTIONS');
  }
  // Below the public reference nothing else is served: a 404, not the 401 of a missing assertion.
  app.all(new RegExp(`^${API_REFERENCE_PATH}/`), (req) => {
    throw new HttpProblem('ERR_ROUTE_NOT_FOUND', `Nothing is served at ${req.path}`);
  });
}
