/**
 * A counter and a histogram for the per-request metrics, whose label sets are bound once:
 * counting is then an array update. prom-client's own `labels(...)` children validate and hash
 * their label set again on every call (about 2% of the gateway's CPU under load, for the eight
 * observations each request makes). They register on a prom-client Registry like its own
 * metrics and are exposed in the same text format.
 */
import type { Metric, Registry } from 'prom-client';

type Labels = Readonly<Record<string, string>>;

/** prom-client's form: a histogram's `le` in `labels`, the series' labels in `sharedLabels`. */
interface MetricValue {
  labels: Labels;
  sharedLabels?: Labels;
  value: number;
  metricName?: string;
}

interface Definition {
  name: string;
  help: string;
}

function register(
  registry: Registry,
  type: 'counter' | 'histogram',
  definition: Definition,
  values: () => MetricValue[],
): void {
  const metric = {
    ...definition,
    type,
    aggregator: 'sum',
    get: () => Promise.resolve({ ...definition, type, aggregator: 'sum', values: values() }),
  };
  registry.registerMetric(metric as unknown as Metric);
}

/** A counter; `bind(labels)` returns the function that adds one to that series. */
export function createBoundCounter(
  registry: Registry,
  definition: Definition,
): { bind(labels: Labels): () => void } {
  const series: { labels: Labels; count: number }[] = [];
  register(registry, 'counter', definition, () =>
    series.map(({ labels, count }) => ({ labels, value: count })),
  );
  return {
    bind(labels) {
      const one = { labels: { ...labels }, count: 0 };
      series.push(one);
      return () => {
        one.count += 1;
      };
    },
  };
}

/** A histogram; `bind(labels)` returns the function that observes a value in that series. */
export function createBoundHistogram(
  registry: Registry,
  definition: Definition & { buckets: readonly number[] },
): { bind(labels: Labels): (value: number) => void } {
  const bounds = [...definition.buckets].sort((a, b) => a - b);
  const series: { labels: Labels; counts: Float64Array; sum: number; count: number }[] = [];
  register(registry, 'histogram', { name: definition.name, help: definition.help }, () =>
    series.flatMap(({ labels, counts, sum, count }) => {
      let cumulative = 0;
      const bucket = `${definition.name}_bucket`;
      const buckets = bounds.map((bound, index) => {
        cumulative += counts[index] ?? 0;
        return { labels: { le: String(bound) }, sharedLabels: labels, value: cumulative, metricName: bucket };
      });
      return [
        ...buckets,
        { labels: { le: '+Inf' }, sharedLabels: labels, value: count, metricName: bucket },
        { labels: {}, sharedLabels: labels, value: sum, metricName: `${definition.name}_sum` },
        { labels: {}, sharedLabels: labels, value: count, metricName: `${definition.name}_count` },
      ];
    }),
  );
  return {
    bind(labels) {
      const one = { labels: { ...labels }, counts: new Float64Array(bounds.length), sum: 0, count: 0 };
      series.push(one);
      return (value) => {
        let index = 0;
        while (index < bounds.length && value > (bounds[index] ?? Infinity)) index++;
        if (index < bounds.length) one.counts[index] = (one.counts[index] ?? 0) + 1;
        one.sum += value;
        one.count += 1;
      };
    },
  };
}
