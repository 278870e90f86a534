/**
 * What is told about every finished request, from one place: the metrics, the audit record
 * and the request log line. The audit record is made of what stages wrote to `ctx.facts`.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { AuditEntry } from '../audit/audit-record.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { GatewayContext } from '../pipeline/context.ts';
import { requestLineWriter } from './logger.ts';
import type { GatewayMetrics } from './metrics.ts';

export interface RequestAccounting {
  /** Called once per request, when its response closed (finished or cut). */
  finished(ctx: GatewayContext, res: ServerResponse, timing: { startedNs: bigint; startedAt: number }): void;
}

export function createRequestAccounting(deps: {
  metrics: GatewayMetrics;
  audit?: AuditLog;
  /** The gateway's logger: the request line names its id itself, without a child logger. */
  log: Logger;
}): RequestAccounting {
  const writeLine = requestLineWriter(deps.log);
  return {
    finished(ctx, res, { startedNs, startedAt }) {
      const seconds = Number(process.hrtime.bigint() - startedNs) / 1e9;
      const method = ctx.req.method ?? 'OTHER';
      const route = ctx.route?.prefix ?? 'none';
      // 499 (nginx's convention): the client left before any answer, which is not a 200.
      const status = res.headersSent ? res.statusCode : 499;
      const latencyMs = Math.round(seconds * 1e4) / 10;
      deps.metrics.observeRequest(route, method, status, seconds);
      deps.audit?.record(auditEntry(ctx, { time: startedAt, method, status, latencyMs }));
      writeLine?.({
        requestId: ctx.requestId,
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

function auditEntry(
  ctx: GatewayContext,
  outcome: { time: number; method: string; status: number; latencyMs: number },
): AuditEntry {
  const { principal, facts } = ctx;
  return {
    time: outcome.time,
    requestId: ctx.requestId,
    ...(facts.traceId === undefined ? {} : { traceId: facts.traceId }),
    ...(principal === undefined
      ? {}
      : {
          subject: principal.subject,
          customerId: principal.customerId,
          ...(principal.keyId === undefined ? {} : { keyId: principal.keyId }),
        }),
    clientAddress: ctx.clientIp,
    method: outcome.method,
    route: ctx.path,
    status: outcome.status,
    latencyMs: outcome.latencyMs,
    authOutcome: facts.auth?.outcome ?? 'none',
    ...(facts.auth?.reason === undefined ? {} : { authReason: facts.auth.reason }),
    ...(facts.rateLimit === undefined ? {} : { rateLimit: facts.rateLimit }),
    ...(facts.cache === undefined ? {} : { cache: facts.cache }),
    ...(facts.retries === undefined ? {} : { retries: facts.retries }),
  };
}
