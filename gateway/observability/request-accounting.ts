/**
 * What is told about every finished request, from one place: the metrics, the audit record
 * and the request log line. The audit record is made of what stages wrote to `ctx.facts`.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Principal } from '../../shared/principal.ts';
import type { AuditEntry } from '../audit/audit-record.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { GatewayContext } from '../pipeline/context.ts';
import { requestLineWriter } from './logger.ts';
import type { GatewayMetrics } from './metrics.ts';
import { routeLabel } from '../config/schema/route-name.ts';

export interface RequestAccounting {
  /**
   * Called once per request, when its response closed (finished or cut), or when its head went
   * out for an answer that hands the connection over (a WebSocket's, edge/tunnel-answer.ts).
   */
  finished(ctx: GatewayContext, res: AnswerProgress, timing: RequestTiming): void;
}

/** What the accounting reads of the client's response. */
export type AnswerProgress = Pick<ServerResponse, 'headersSent' | 'statusCode' | 'writableFinished'>;

/** When a request began: `startedMs` on the monotonic clock (performance.now), `startedAt` epoch ms. */
export interface RequestTiming {
  startedMs: number;
  startedAt: number;
}

export function createRequestAccounting(deps: {
  metrics: GatewayMetrics;
  audit?: AuditLog;
  /** The gateway's logger: the request line names its id itself, without a child logger. */
  log: Logger;
}): RequestAccounting {
  const writeLine = requestLineWriter(deps.log);
  return {
    finished(ctx, res, { startedMs, startedAt }) {
      const seconds = (performance.now() - startedMs) / 1000;
      const method = ctx.req.method ?? 'OTHER';
      const route = ctx.upstream.route === undefined ? 'none' : routeLabel(ctx.upstream.route);
      // 499 (nginx's convention): the client left before any answer, which is not a 200.
      const status = res.headersSent ? res.statusCode : 499;
      const latencyMs = Math.round(seconds * 1e4) / 10;
      deps.metrics.observeRequest(route, method, status, seconds);
      deps.audit?.record(auditEntry(ctx, { time: startedAt, method, status, latencyMs, route }));
      writeLine?.({
        requestId: ctx.upstream.requestId,
        clientRequestId: ctx.upstream.clientRequestId,
        traceId: ctx.facts.traceId,
        method,
        path: ctx.path,
        route,
        status,
        durationMs: latencyMs,
        aborted: !res.writableFinished,
      });
    },
  };
}

/** How the principal's token was bound, as the audit record states it (its `cnf`, checked). */
function bindingOf(principal: Principal): AuditEntry['authBinding'] {
  const jkt = principal.cnf?.jkt;
  const x5t = principal.cnf?.['x5t#S256'];
  // Bound both ways, both were checked (sender-check.ts): the record names both.
  if (jkt !== undefined && x5t !== undefined) return { method: 'dpop+mtls', jkt, 'x5t#S256': x5t };
  if (jkt !== undefined) return { method: 'dpop', jkt };
  if (x5t !== undefined) return { method: 'mtls', 'x5t#S256': x5t };
  return NOT_BOUND;
}
const NOT_BOUND = Object.freeze({ method: 'none' as const });

function auditEntry(
  ctx: GatewayContext,
  outcome: { time: number; method: string; status: number; latencyMs: number; route: string },
): AuditEntry {
  const { principal, requestId, clientRequestId, clientIp } = ctx.upstream;
  const { facts } = ctx;
  // Fields left undefined are left out of the record (audit-record.ts writes it as JSON).
  return {
    time: outcome.time,
    requestId,
    clientRequestId,
    traceId: facts.traceId,
    subject: principal?.subject,
    customerId: principal?.customerId,
    keyId: principal?.keyId,
    clientAddress: clientIp,
    method: outcome.method,
    path: ctx.path,
    // The same words as the request line: `none` when no route matched.
    route: outcome.route,
    status: outcome.status,
    latencyMs: outcome.latencyMs,
    authOutcome: facts.auth?.outcome ?? 'none',
    authReason: facts.auth?.reason,
    authBinding: principal === undefined ? undefined : bindingOf(principal),
    rateLimit: facts.rateLimit,
    cache: facts.cache,
    retries: facts.retries,
    websocket: facts.websocket === undefined ? undefined : { event: facts.websocket },
  };
}
