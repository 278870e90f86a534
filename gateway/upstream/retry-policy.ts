/**
 * What follows a failed attempt: the target is told to outlier ejection, and an idempotent
 * request without a body is given the target to try next, if the retry budget allows one.
 * After a connection failure that is another target, or the same one when no other can take
 * it (a stale keep-alive connection is the usual cause); after a 503, only another target,
 * and a Retry-After in it keeps the target that sent it out meanwhile. Each retry is counted,
 * logged and noted for the audit record.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { parseHttpDate } from '../foundation/http-date.ts';
import type { Logger } from 'pino';
import type { RequestFacts } from '../pipeline/context.ts';
import { available, pickMember } from './balancer.ts';
import type { ProxyConfig } from '../config/schema/upstream.ts';
import type { RouteUpstreams } from './route-upstreams.ts';
import { withinRetryBudget } from './retry-budget.ts';
import type { Member, UpstreamSet } from './upstream-set.ts';

/** What a retry is told to, of the request it retries: its log, and its audit facts. */
export interface RetryWitness {
  readonly log: Logger;
  readonly facts: RequestFacts;
}

export interface RetryPolicy {
  /** After a failure to get an answer; the member to retry on, or undefined to give up. */
  afterFailure(
    request: RetryWitness,
    set: UpstreamSet,
    failed: Member,
    reason: string,
    mayRetry: boolean,
  ): Member | undefined;
  /** After a 5xx answer; the member to retry on (503 only), or undefined to relay the answer. */
  afterServerError(
    request: RetryWitness,
    set: UpstreamSet,
    failed: Member,
    status: number,
    headers: IncomingHttpHeaders,
    mayRetry: boolean,
  ): Member | undefined;
}

export function createRetryPolicy(config: ProxyConfig, routes: RouteUpstreams): RetryPolicy {
  const { outlier, metrics } = routes;

  const retryOn = (
    request: RetryWitness,
    set: UpstreamSet,
    failed: Member,
    reason: string,
    next: Member | undefined,
  ) => {
    if (next === undefined) return undefined;
    if (!withinRetryBudget(set, config.retryBudget)) {
      metrics.retryBudgetExhausted(set.route);
      request.log.warn({ upstream: failed.url, reason }, 'retry budget exhausted: not retrying');
      return undefined;
    }
    metrics.retried(set.route, reason);
    (request.facts.retries ??= []).push({ target: failed.url, reason });
    request.log.warn({ upstream: failed.url, reason, next: next.url }, 'retrying idempotent request');
    return next;
  };

  return {
    afterFailure(request, set, failed, reason, mayRetry) {
      outlier.failed(set, failed);
      if (!mayRetry) return undefined;
      const next = pickMember(set, failed) ?? (available(set, failed) ? failed : undefined);
      return retryOn(request, set, failed, reason, next);
    },
    afterServerError(request, set, failed, status, headers, mayRetry) {
      const holdMs = status === 503 ? retryAfterMs(headers['retry-after']) : undefined;
      // `Retry-After: 0` (or a date gone by) asks for no wait: a failure like any other.
      if (holdMs === undefined || holdMs === 0) outlier.failed(set, failed);
      else outlier.holdBack(set, failed, holdMs);
      if (!mayRetry || status !== 503 || set.single !== undefined) return undefined;
      return retryOn(request, set, failed, '503', pickMember(set, failed));
    },
  };
}

/** Retry-After (RFC 9110 section 10.2.3) in milliseconds from now: seconds, or an HTTP date. */
function retryAfterMs(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // The cache's strict HTTP-date reader: Date.parse takes almost anything for a date.
  const at = parseHttpDate(value);
  return at === undefined ? undefined : Math.max(0, at - Date.now());
}
