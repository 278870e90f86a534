/**
 * The cache's figures in Prometheus: read from `cache.stats()` at scrape time, so the hot
 * path only bumps plain counters.
 *
 * Under GATEWAY_WORKERS each worker has a cache of its own and `/metrics` aggregates them
 * (workers.ts): counters, bytes and entries sum; the hit ratio is left out, since no
 * aggregation of per-worker ratios is the fleet's ratio (see its gauge).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { HttpCache } from './engine/http-cache.ts';

/** Adds the cache's gauges and counters to a gateway registry (`portico_cache_*`). */
export function registerCacheMetrics(registry: Registry, cache: HttpCache): void {
  new Counter({
    name: 'portico_cache_requests_total',
    help: 'GET/HEAD requests on cached routes, by result: hit (no upstream call), revalidated (304 from upstream), miss, bypass; stale counts stale answers (also in hit).',
    labelNames: ['result'] as const,
    registers: [registry],
    collect() {
      const stats = cache.stats();
      this.reset();
      this.inc({ result: 'hit' }, stats.hits);
      this.inc({ result: 'revalidated' }, stats.revalidated);
      this.inc({ result: 'miss' }, stats.misses);
      this.inc({ result: 'bypass' }, stats.bypassed);
      this.inc({ result: 'stale' }, stats.stale);
    },
  });
  new Gauge({
    name: 'portico_cache_hit_ratio',
    help: 'Hits over hits, revalidations and misses since start (0 before the first). Not exported under GATEWAY_WORKERS: compute it from portico_cache_requests_total.',
    registers: [registry],
    // Workers: a sum of ratios reaches 2, and an average weighs a worker of 10 requests (one
    // just replaced) like one of 10,000. The fleet's ratio is sum(hits) / sum(lookups), which
    // the summed portico_cache_requests_total gives in PromQL (docs/operations.md): omitted here
    // rather than shown wrong.
    aggregator: 'omit',
    collect() {
      const { hits, revalidated, misses } = cache.stats();
      const total = hits + revalidated + misses;
      this.set(total === 0 ? 0 : hits / total);
    },
  });
  new Gauge({
    name: 'portico_cache_bytes',
    help: 'Memory taken by stored responses (bodies, headers, bookkeeping); under GATEWAY_WORKERS, of all workers.',
    registers: [registry],
    // Workers: memory of every worker's cache together.
    aggregator: 'sum',
    collect() {
      this.set(cache.stats().bytes);
    },
  });
  new Gauge({
    name: 'portico_cache_entries',
    help: 'Stored responses; under GATEWAY_WORKERS, of all workers (a response stored by two counts 2).',
    registers: [registry],
    // Workers: copies, not distinct responses: each worker stores what it fetched itself.
    aggregator: 'sum',
    collect() {
      this.set(cache.stats().entries);
    },
  });
  new Counter({
    name: 'portico_cache_stored_total',
    help: 'Responses stored.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(cache.stats().stored);
    },
  });
  new Counter({
    name: 'portico_cache_invalidated_total',
    help: 'Stored responses dropped by invalidation or purge (this replica).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(cache.stats().invalidated);
    },
  });
}
