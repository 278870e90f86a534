/**
 * The bound counter and histogram (gateway/observability/bound-metrics.ts) say exactly what
 * prom-client's own Counter and Histogram say for the same observations, so /metrics readers
 * (Prometheus, dashboards, the tests that read it) see no difference.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createBoundCounter, createBoundHistogram } from '../../../gateway/observability/bound-metrics.ts';

const BUCKETS = [0.00001, 0.001, 0.25, 5];
const VALUES = [0, 0.00001, 0.000011, 0.3, 5, 6, 1e-7, 0.25];

describe('bound metrics', () => {
  it('expose the same text as prom-client for the same counts and observations', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const counter = createBoundCounter(ours, { name: 'c_total', help: 'a counter' });
    const histogram = createBoundHistogram(ours, {
      name: 'h_seconds',
      help: 'a histogram',
      buckets: BUCKETS,
    });
    const promCounter = new Counter({
      name: 'c_total',
      help: 'a counter',
      labelNames: ['route', 'status'],
      registers: [theirs],
    });
    const promHistogram = new Histogram({
      name: 'h_seconds',
      help: 'a histogram',
      labelNames: ['stage'],
      buckets: BUCKETS,
      registers: [theirs],
    });

    for (const [route, status, times] of [
      ['/v1', '200', 3],
      ['/v2', '404', 1],
    ] as const) {
      const inc = counter.bind({ route, status });
      for (let i = 0; i < times; i++) {
        inc();
        promCounter.inc({ route, status });
      }
    }
    for (const stage of ['route', 'proxy']) {
      const observe = histogram.bind({ stage });
      for (const value of VALUES) {
        observe(value * (stage === 'proxy' ? 2 : 1));
        promHistogram.observe({ stage }, value * (stage === 'proxy' ? 2 : 1));
      }
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
