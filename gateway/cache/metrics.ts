/**
 * The cache's figures in Prometheus: read from `cache.stats()` at scrape time, so the hot
 * path only bumps plain counters.
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
    help: 'Hits over hits, revalidations and misses since start (0 before the first).',
    registers: [registry],
    collect() {
      const { hits, revalidated, misses } = cache.stats();
      const total = hits + revalidated + misses;
      this.set(total === 0 ? 0 : hits / total);
    },
  });
  new Gauge({
    name: 'portico_cache_bytes',
    help: 'Memory taken by stored responses (bodies, headers, bookkeeping).',
    registers: [registry],
    collect() {
      this.set(cache.stats().bytes);
    },
  });
  new Gauge({
    name: 'portico_cache_entries',
    help: 'Stored responses.',
    registers: [registry],
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
