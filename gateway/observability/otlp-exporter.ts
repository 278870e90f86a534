/**
 * Exports the gateway's spans to an OpenTelemetry collector over OTLP/HTTP with the JSON
 * encoding (https://opentelemetry.io/docs/specs/otlp/#otlphttp).
 *
 * Our own, not the OpenTelemetry SDK: the SDK's tracer, context manager (AsyncLocalStorage on
 * every request) and span processors are some twenty packages for what is here one span per
 * request whose ids the trace-context stage already made; the SDK's span object alone costs
 * more per request than this whole file does.
 *
 * Requests never wait for it: `record` pushes onto a bounded queue (full: the span is dropped
 * and counted), batches leave on a timer or when full, one export request at a time, and a
 * collector that fails or hangs costs its batch, counted, never a request.
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { Pool } from '../../shared/undici-parts.ts';
import type { OtlpExportConfig } from '../config/schema/tracing.ts';

/** One finished span, kept as plain fields until its batch is encoded. */
export interface FinishedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** Epoch milliseconds, fractional. */
  startMs: number;
  endMs: number;
  /** OTLP status ERROR when true (a 5xx, or an answer cut short). */
  error: boolean;
  attributes: Readonly<Record<string, string | number>>;
}

export interface ExportStats {
  exported: number;
  dropped: number;
  failedRequests: number;
  queued: number;
}

export interface SpanExporter {
  record(span: FinishedSpan): void;
  stats(): ExportStats;
  /** Sends what is queued (bounded by the timeout), then closes the connection. */
  close(): Promise<void>;
}

type RequiredExport = OtlpExportConfig & { endpoint: string };

/** The exporter's counts in /metrics, read when scraped. */
export function registerExportMetrics(registry: Registry, exporter: SpanExporter): void {
  const series: [string, string, keyof ExportStats][] = [
    ['portico_trace_spans_exported', 'Spans the OTLP collector accepted since start.', 'exported'],
    [
      'portico_trace_spans_dropped',
      'Spans dropped since start: queue full, or their export failed.',
      'dropped',
    ],
    ['portico_trace_spans_queued', 'Spans waiting for export.', 'queued'],
  ];
  for (const [name, help, key] of series) {
    new Gauge({
      name,
      help,
      registers: [registry],
      // Workers: each exports, drops and queues its own spans: the gateway's are the sum.
      aggregator: 'sum',
      collect() {
        this.set(exporter.stats()[key]);
      },
    });
  }
}

export function createOtlpExporter(config: RequiredExport, log: Logger): SpanExporter {
  const url = new URL(config.endpoint);
  const pool = new Pool(url.origin, { connections: 1, pipelining: 1 });
  const path = `${url.pathname}${url.search}`;
  const headers = { ...config.headers, 'content-type': 'application/json' };
  const resource = encodeResource(config.serviceName);
  const stats = { exported: 0, dropped: 0, failedRequests: 0 };
  let queue: FinishedSpan[] = [];
  let timer: NodeJS.Timeout | undefined;
  let sending: Promise<void> | undefined;
  let lastWarning = 0;

  function warn(message: string): void {
    // A collector that is down would otherwise log once per batch.
    if (Date.now() - lastWarning < 60_000) return;
    lastWarning = Date.now();
    log.warn({ endpoint: url.origin, dropped: stats.dropped }, message);
  }

  async function send(batch: FinishedSpan[]): Promise<void> {
    try {
      const response = await pool.request({
        method: 'POST',
        path,
        headers,
        body: JSON.stringify(encodeBatch(resource, batch)),
        headersTimeout: config.timeoutMs,
        bodyTimeout: config.timeoutMs,
      });
      await response.body.dump();
      if (response.statusCode >= 200 && response.statusCode < 300) {
        stats.exported += batch.length;
        return;
      }
      warn(`span export refused with status ${response.statusCode}`);
    } catch (error) {
      warn(`span export failed: ${(error as Error).message}`);
    }
    stats.failedRequests += 1;
    stats.dropped += batch.length;
  }

  /** Starts the next export when none is running; each one chains the next while spans wait. */
  function flush(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (sending !== undefined || queue.length === 0) return;
    const batch = queue.length <= config.maxBatchSpans ? queue : queue.slice(0, config.maxBatchSpans);
    queue = batch === queue ? [] : queue.slice(batch.length);
    sending = send(batch).finally(() => {
      sending = undefined;
      if (queue.length >= config.maxBatchSpans) flush();
      else schedule();
    });
  }

  function schedule(): void {
    if (timer !== undefined || queue.length === 0) return;
    timer = setTimeout(flush, config.flushIntervalMs);
    timer.unref();
  }

  return {
    record(span) {
      if (queue.length >= config.maxQueueSpans) {
        stats.dropped += 1;
        return;
      }
      queue.push(span);
      if (queue.length >= config.maxBatchSpans) flush();
      else schedule();
    },
    stats: () => ({ ...stats, queued: queue.length }),
    async close() {
      const deadline = Date.now() + config.timeoutMs;
      while ((queue.length > 0 || sending !== undefined) && Date.now() < deadline) {
        flush();
        await sending;
      }
      if (timer !== undefined) clearTimeout(timer);
      stats.dropped += queue.length;
      queue = [];
      await pool.close();
    },
  };
}

type AnyValue = { stringValue: string } | { intValue: string };
type KeyValue = { key: string; value: AnyValue };

function attribute(key: string, value: string | number): KeyValue {
  return {
    key,
    value: typeof value === 'number' ? { intValue: String(Math.trunc(value)) } : { stringValue: value },
  };
}

function encodeResource(serviceName: string) {
  return { attributes: [attribute('service.name', serviceName)] };
}

/** Epoch milliseconds (fractional) as OTLP's decimal string of nanoseconds. */
function unixNano(ms: number): string {
  return (BigInt(Math.round(ms * 1000)) * 1000n).toString();
}

const SPAN_KIND_SERVER = 2;
const STATUS_CODE_ERROR = 2;

function encodeBatch(resource: ReturnType<typeof encodeResource>, batch: readonly FinishedSpan[]) {
  return {
    resourceSpans: [
      {
        resource,
        scopeSpans: [
          {
            scope: { name: 'portico-gateway' },
            spans: batch.map((span) => ({
              traceId: span.traceId,
              spanId: span.spanId,
              ...(span.parentSpanId === undefined ? {} : { parentSpanId: span.parentSpanId }),
              name: span.name,
              kind: SPAN_KIND_SERVER,
              startTimeUnixNano: unixNano(span.startMs),
              endTimeUnixNano: unixNano(span.endMs),
              attributes: Object.entries(span.attributes).map(([key, value]) => attribute(key, value)),
              ...(span.error ? { status: { code: STATUS_CODE_ERROR } } : {}),
            })),
          },
        ],
      },
    ],
  };
}
