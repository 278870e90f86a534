/**
 * Passive health: a target that fails `consecutiveFailures` times in a row (no connection, a
 * timeout, a 5xx) is taken out of its route for `baseEjectionMs` times the number of its recent
 * ejections, at most `maxEjectionMs`; a 503 with Retry-After takes it out for that long. Never
 * more than `maxEjectionPercent` of a route's targets are out this way at once, so a route
 * with one target never loses it. A timer brings each ejected target back; a passing health
 * check brings one ejected for its failures back sooner.
 */
import type { Logger } from 'pino';
import type { OutlierDetection } from '../config/schema/upstream.ts';
import type { ResilienceMetrics } from './resilience-metrics.ts';
import { refreshMember, type Member, type UpstreamSet } from './upstream-set.ts';

export interface OutlierEjection {
  /** A failed attempt on `member`; ejects it once the failures in a row reach the threshold. */
  failed(set: UpstreamSet, member: Member): void;
  /** Keeps `member` out for `ms` (a 503's Retry-After), within the same share of targets. */
  holdBack(set: UpstreamSet, member: Member, ms: number): void;
  /**
   * A passing health check: ends an ejection for failures early, never a Retry-After hold
   * (the target said when to come back; its health endpoint may well answer meanwhile).
   */
  checkPassed(set: UpstreamSet, member: Member): void;
  close(): void;
}

export function createOutlierEjection(
  config: OutlierDetection,
  deps: { log: Logger; metrics: ResilienceMetrics },
): OutlierEjection {
  const ejectedMembers = new Map<Member, UpstreamSet>();

  const readmit = (set: UpstreamSet, member: Member) => {
    if (!member.ejected) return;
    clearTimeout(member.ejectionTimer);
    member.ejectionTimer = undefined;
    member.ejected = false;
    member.returnedAt = Date.now();
    set.ejectedCount--;
    ejectedMembers.delete(member);
    refreshMember(member);
    deps.log.info({ route: set.route, upstream: member.url }, 'upstream target back in rotation');
  };

  const eject = (set: UpstreamSet, member: Member, ms: number, reason: string) => {
    const room = Math.floor((set.members.length * config.maxEjectionPercent) / 100);
    if (member.ejected || set.ejectedCount >= room) return;
    member.ejected = true;
    member.ejectedFor = reason;
    set.ejectedCount++;
    ejectedMembers.set(member, set);
    refreshMember(member);
    member.ejectionTimer = setTimeout(() => readmit(set, member), ms);
    member.ejectionTimer.unref();
    deps.metrics.ejected(set.route, member.url, reason);
    deps.log.warn({ route: set.route, upstream: member.url, reason, forMs: ms }, 'upstream target ejected');
  };

  return {
    failed(set, member) {
      if (++member.consecutiveFailures < config.consecutiveFailures) return;
      member.consecutiveFailures = 0;
      if (member.ejected) return;
      // Each quiet base interval since the last return forgives one earlier ejection.
      const quiet = Math.floor((Date.now() - member.returnedAt) / config.baseEjectionMs);
      const ejections = Math.max(0, member.ejections - quiet) + 1;
      const ms = Math.min(config.baseEjectionMs * ejections, config.maxEjectionMs);
      const before = set.ejectedCount;
      eject(set, member, ms, 'consecutive failures');
      if (set.ejectedCount > before) member.ejections = ejections;
    },
    holdBack(set, member, ms) {
      eject(set, member, Math.min(ms, config.maxEjectionMs), 'retry-after');
    },
    checkPassed(set, member) {
      if (member.ejectedFor !== 'retry-after') readmit(set, member);
    },
    close() {
      for (const member of ejectedMembers.keys()) {
        clearTimeout(member.ejectionTimer);
        member.ejectionTimer = undefined;
      }
      ejectedMembers.clear();
    },
  };
}
