/**
 * W3C Trace Context at the edge: a client's valid `traceparent` is continued (its trace id
 * kept), anything else starts a new trace here; either way the request goes upstream with
 * this gateway's own span as the parent, so the service's spans nest under the gateway's.
 * The trace id goes to the request log line and the audit record (`ctx.facts.traceId`).
 *
 * Right after request-id, so that refusals too carry a trace id. No response side and no
 * promise of its own: it returns `next()` as is.
 */
import type { SpanExporter } from '../observability/otlp-exporter.ts';
import {
  formatTraceParent,
  isValidTraceState,
  newSpanId,
  newTraceId,
  parseTraceParent,
} from '../observability/trace-context-header.ts';
import type { GatewayContext, Stage } from '../pipeline/context.ts';
import type { TracingConfig } from '../config/schema/tracing.ts';
import { routeLabel } from '../config/schema/route-name.ts';

interface SpanIds {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
}

export function createTraceContextStage(config: TracingConfig, exporter?: SpanExporter): Stage {
  const sampleNew = exporter === undefined ? () => false : ratioSampler(config.otlp.sampleRatio);
  return function traceContext(ctx, next) {
    const { headers } = ctx.req;
    const parent = config.acceptFromClient ? parseTraceParent(headers.traceparent) : undefined;
    const traceId = parent?.traceId ?? newTraceId();
    const spanId = newSpanId();
    // Sampled says "the caller may have recorded": of a new trace, only when we export it.
    const sampled = parent?.sampled ?? sampleNew(traceId);
    ctx.facts.traceId = traceId;
    ctx.upstream.headers.set('traceparent', formatTraceParent(traceId, spanId, sampled));
    // tracestate belongs to the trace its traceparent named: with a new trace it must go.
    if (
      headers.tracestate !== undefined &&
      (parent === undefined || !isValidTraceState(headers.tracestate))
    ) {
      ctx.upstream.headers.delete('tracestate');
    }
    if (exporter !== undefined && sampled) {
      exportOnClose(ctx, exporter, { traceId, spanId, parentSpanId: parent?.parentId });
    }
    return next();
  };
}

/**
 * Samples a share of new traces by their id (its last 8 hex digits as a fraction), as
 * OpenTelemetry's TraceIdRatioBased sampler does: no random draw of its own, and every
 * process that sees the trace decides alike.
 */
function ratioSampler(ratio: number): (traceId: string) => boolean {
  if (ratio >= 1) return () => true;
  if (ratio <= 0) return () => false;
  const bound = Math.floor(ratio * 0x1_0000_0000);
  return (traceId) => Number.parseInt(traceId.slice(-8), 16) < bound;
}

/** The span ends when the response does (its body sent, or cut short). */
function exportOnClose(ctx: GatewayContext, exporter: SpanExporter, ids: SpanIds): void {
  const startMs = performance.timeOrigin + performance.now();
  ctx.res.once('close', () => {
    const { req, res } = ctx;
    const method = req.method ?? 'OTHER';
    const route = ctx.upstream.route === undefined ? undefined : routeLabel(ctx.upstream.route);
    const status = res.headersSent ? res.statusCode : 499;
    exporter.record({
      traceId: ids.traceId,
      spanId: ids.spanId,
      ...(ids.parentSpanId === undefined ? {} : { parentSpanId: ids.parentSpanId }),
      name: route === undefined ? method : `${method} ${route}`,
      startMs,
      endMs: performance.timeOrigin + performance.now(),
      error: status >= 500 || !res.writableFinished,
      attributes: {
        'http.request.method': method,
        'url.path': ctx.path,
        ...(route === undefined ? {} : { 'http.route': route }),
        'http.response.status_code': status,
        'portico.request_id': ctx.upstream.requestId,
        ...(ctx.upstream.clientRequestId === undefined
          ? {}
          : { 'portico.client_request_id': ctx.upstream.clientRequestId }),
      },
    });
  });
}
