/**
 * The `tracing` config: whether a client's W3C trace context is continued, and where (if
 * anywhere) the gateway's spans are exported over OTLP/HTTP. Export is off unless an endpoint
 * is written.
 */
import { Type, type Static } from '@sinclair/typebox';

export const OtlpExportConfigSchema = Type.Object(
  {
    endpoint: Type.Optional(
      Type.String({
        format: 'uri',
        description:
          'OTLP/HTTP traces URL (JSON encoding), as `http://127.0.0.1:4318/v1/traces`. Absent: no export.',
      }),
    ),
    headers: Type.Record(Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" }), Type.String(), {
      default: {},
      description: 'Request headers for the collector (an API key, say). Never logged.',
    }),
    sampleRatio: Type.Number({
      minimum: 0,
      maximum: 1,
      default: 1,
      description:
        "Share of the traces started here that are sampled (and exported), decided from the trace id; a client's own sampled flag is kept as it is.",
    }),
    serviceName: Type.String({
      minLength: 1,
      default: 'portico-gateway',
      description: 'The `service.name` resource attribute of the exported spans.',
    }),
    maxQueueSpans: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: 4096,
      description: 'Spans waiting for export; past it new spans are dropped (counted), never waited for.',
    }),
    maxBatchSpans: Type.Integer({
      minimum: 1,
      maximum: 10_000,
      default: 512,
      description: 'Spans per export request: a full batch is sent at once.',
    }),
    flushIntervalMs: Type.Integer({
      minimum: 10,
      maximum: 60_000,
      default: 1000,
      description: 'Longest time a span waits for its batch to fill.',
    }),
    timeoutMs: Type.Integer({
      minimum: 100,
      maximum: 60_000,
      default: 5000,
      description: 'An export request taking longer is abandoned and its spans counted as dropped.',
    }),
  },
  { additionalProperties: false, default: {}, description: 'OTLP/HTTP export of spans.' },
);

export const TracingConfigSchema = Type.Object(
  {
    acceptFromClient: Type.Boolean({
      default: true,
      description:
        "Continue a client's valid `traceparent`/`tracestate`. Off: every request starts a new trace at the edge.",
    }),
    otlp: OtlpExportConfigSchema,
  },
  { additionalProperties: false, default: {}, description: 'W3C Trace Context and span export.' },
);

export type TracingConfig = Static<typeof TracingConfigSchema>;
export type OtlpExportConfig = Static<typeof OtlpExportConfigSchema>;

/** Checks the schema cannot say; each message is `path: problem`. */
export function checkTracingConfig(tracing: TracingConfig): string[] {
  const endpoint = tracing.otlp.endpoint;
  if (endpoint === undefined) return [];
  const url = URL.parse(endpoint);
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    return ['tracing.otlp.endpoint: must be an http: or https: URL'];
  return [];
}
