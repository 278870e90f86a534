/**
 * W3C Trace Context at the edge, over real sockets: a valid client `traceparent` continued with
 * the gateway's own span as the new parent, every invalid form the spec names replaced by a new
 * trace (its `tracestate` dropped), the trace id in the request log line and the audit record,
 * and spans exported over OTLP/HTTP JSON to a real local HTTP receiver, without requests ever
 * waiting for it. The header rules on their own: trace-context-header.unit.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createOtlpExporter, type FinishedSpan } from '../../../gateway/observability/otlp-exporter.ts';
import {
  newSpanId,
  newTraceId,
  parseTraceParent,
} from '../../../gateway/observability/trace-context-header.ts';
import { parseConfig } from '../../../gateway/config/load.ts';
import {
  sleep,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const VALID = `00-${TRACE}-${PARENT}-01`;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(config: Record<string, unknown> = {}, withAudit = false) {
  const upstream = await startRecordingUpstream();
  cleanups.push(() => upstream.close());
  const dir = mkdtempSync(join(tmpdir(), 'portico-trace-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const auditLogPath = join(dir, 'audit.log');
  const gw = await startTestGateway(upstream.url, config, withAudit ? { auditLogPath } : {});
  cleanups.push(() => gw.close());
  return { upstream, gw, auditLogPath };
}

async function get(gw: TestGateway, path: string, headers: Record<string, string | string[]> = {}) {
  const response = await request(`${gw.origin}${path}`, { dispatcher: gw.agent, headers });
  await response.body.text();
  return response;
}

function sentUpstream(upstream: RecordingUpstream) {
  const seen = upstream.records.at(-1)!;
  const traceparent = seen.headers['traceparent'];
  expect(typeof traceparent).toBe('string');
  const parsed = parseTraceParent(traceparent);
  expect(parsed, `upstream got a valid traceparent: ${String(traceparent)}`).toBeDefined();
  return { ...parsed!, raw: traceparent as string, tracestate: seen.headers['tracestate'] };
}

function requestLine(gw: TestGateway, requestId: string) {
  return gw.logs.find((line) => line['msg'] === 'request' && line['requestId'] === requestId);
}

describe('trace context through the gateway', () => {
  it("continues a client's trace with the gateway's span as the new parent; tracestate travels on", async () => {
    const { upstream, gw } = await setup();
    const response = await get(gw, '/v1/orders', { traceparent: VALID, tracestate: 'congo=t61rcWkgMzE' });
    expect(response.statusCode).toBe(200);
    const sent = sentUpstream(upstream);
    expect(sent.traceId).toBe(TRACE);
    expect(sent.parentId).not.toBe(PARENT);
    expect(sent.sampled).toBe(true);
    expect(sent.raw.startsWith('00-')).toBe(true);
    expect(sent.tracestate).toBe('congo=t61rcWkgMzE');
    // Only one traceparent goes upstream: ours replaced the client's.
    const fields = upstream.records
      .at(-1)!
      .rawHeaders.filter((_, i, raw) => i % 2 === 0 && /^traceparent$/i.test(raw[i]!));
    expect(fields).toHaveLength(1);
  });

  it('keeps an unsampled trace unsampled', async () => {
    const { upstream, gw } = await setup();
    await get(gw, '/v1/orders', { traceparent: `00-${TRACE}-${PARENT}-00` });
    expect(sentUpstream(upstream)).toMatchObject({ traceId: TRACE, sampled: false });
  });

  it.each([
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${PARENT}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${PARENT}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${PARENT}-01`],
  ])('starts a new trace for %s and drops its tracestate', async (_name, traceparent) => {
    const { upstream, gw } = await setup();
    await get(gw, '/v1/orders', { traceparent, tracestate: 'congo=t61rcWkgMzE' });
    const sent = sentUpstream(upstream);
    expect(sent.traceId).not.toBe(TRACE);
    expect(sent.traceId.toLowerCase()).not.toBe(TRACE);
    expect(sent.tracestate).toBeUndefined();
  });

  it('starts a new trace for two traceparent fields', async () => {
    const { upstream, gw } = await setup();
    await get(gw, '/v1/orders', { traceparent: [VALID, `00-${'1'.repeat(32)}-${PARENT}-01`] });
    expect(sentUpstream(upstream).traceId).not.toBe(TRACE);
  });

  it('drops a malformed tracestate but keeps the trace', async () => {
    const { upstream, gw } = await setup();
    await get(gw, '/v1/orders', { traceparent: VALID, tracestate: 'Not Valid' });
    const sent = sentUpstream(upstream);
    expect(sent.traceId).toBe(TRACE);
    expect(sent.tracestate).toBeUndefined();
  });

  it('starts a trace when none was sent, and each request gets its own', async () => {
    const { upstream, gw } = await setup();
    await get(gw, '/v1/a');
    const first = sentUpstream(upstream);
    await get(gw, '/v1/b');
    const second = sentUpstream(upstream);
    expect(first.traceId).not.toBe(second.traceId);
    // Nothing exports spans here: the gateway does not claim to have recorded any.
    expect(first.sampled).toBe(false);
  });

  it('with acceptFromClient off, a valid traceparent is not continued', async () => {
    const { upstream, gw } = await setup({ tracing: { acceptFromClient: false } });
    await get(gw, '/v1/orders', { traceparent: VALID, tracestate: 'congo=1' });
    const sent = sentUpstream(upstream);
    expect(sent.traceId).not.toBe(TRACE);
    expect(sent.tracestate).toBeUndefined();
  });

  it('puts the trace id in the request log line and the audit record, refusals included', async () => {
    const { upstream, gw, auditLogPath } = await setup({}, true);
    const ok = await get(gw, '/v1/orders', { traceparent: VALID });
    const refused = await get(gw, '/nowhere', { traceparent: `00-${'a'.repeat(32)}-${PARENT}-01` });
    expect(refused.statusCode).toBe(404);
    const okId = String(ok.headers['x-request-id']);
    const refusedId = String(refused.headers['x-request-id']);
    await expect.poll(() => requestLine(gw, refusedId)).toBeDefined();
    expect(requestLine(gw, okId)?.['traceId']).toBe(TRACE);
    expect(requestLine(gw, refusedId)?.['traceId']).toBe('a'.repeat(32));
    expect(sentUpstream(upstream).traceId).toBe(TRACE);
    await gw.close();
    cleanups.splice(cleanups.length - 1, 1);
    const records = readFileSync(auditLogPath, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.find((r) => r['requestId'] === okId)?.['traceId']).toBe(TRACE);
    expect(records.find((r) => r['requestId'] === refusedId)?.['traceId']).toBe('a'.repeat(32));
  });
});

/** A real OTLP/HTTP receiver: records every JSON body posted to /v1/traces. */
async function startReceiver(
  answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('{}'),
) {
  const bodies: OtlpBody[] = [];
  const requests: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req);
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type'] === 'application/json')
        bodies.push(JSON.parse(text) as OtlpBody);
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  cleanups.push(close);
  return {
    endpoint,
    bodies,
    requests,
    spans: () => bodies.flatMap((b) => b.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))),
  };
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string } }[];
  status?: { code: number };
}
interface OtlpBody {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

const attr = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.intValue;
};

describe('OTLP/HTTP export of spans', () => {
  it('is off by default', () => {
    const { config } = parseConfig({});
    expect(config.tracing.otlp.endpoint).toBeUndefined();
  });

  it("sends the gateway's server span to a real receiver: ids, parent, name, attributes, status", async () => {
    const receiver = await startReceiver();
    const { upstream, gw } = await setup({
      tracing: { otlp: { endpoint: receiver.endpoint, flushIntervalMs: 20, headers: { 'x-api-key': 'k1' } } },
    });
    const response = await get(gw, '/v1/orders?limit=2', { traceparent: VALID });
    const sent = sentUpstream(upstream);
    await get(gw, '/nowhere');
    await expect.poll(() => receiver.spans().length, { timeout: 3000 }).toBe(2);
    const [span, refusal] = receiver.spans();
    expect(span).toMatchObject({
      traceId: TRACE,
      spanId: sent.parentId,
      parentSpanId: PARENT,
      name: 'GET /v1',
      kind: 2,
    });
    expect(span!.status).toBeUndefined();
    expect(BigInt(span!.endTimeUnixNano)).toBeGreaterThan(BigInt(span!.startTimeUnixNano));
    expect(Math.abs(Number(BigInt(span!.startTimeUnixNano) / 1_000_000n) - Date.now())).toBeLessThan(10_000);
    expect(attr(span!, 'http.response.status_code')).toBe('200');
    expect(attr(span!, 'url.path')).toBe('/v1/orders');
    expect(attr(span!, 'portico.request_id')).toBe(String(response.headers['x-request-id']));
    expect(refusal).toMatchObject({ name: 'GET' });
    expect(refusal!.parentSpanId).toBeUndefined();
    expect(attr(refusal!, 'http.response.status_code')).toBe('404');
    expect(receiver.bodies[0]!.resourceSpans[0]!.resource.attributes).toContainEqual({
      key: 'service.name',
      value: { stringValue: 'portico-gateway' },
    });
    expect(receiver.requests[0]!.headers['x-api-key']).toBe('k1');
    // A new trace started by an exporting gateway is sampled: it was recorded.
    await get(gw, '/v1/x');
    expect(sentUpstream(upstream).sampled).toBe(true);
  });

  it('does not export an unsampled trace', async () => {
    const receiver = await startReceiver();
    const { gw } = await setup({ tracing: { otlp: { endpoint: receiver.endpoint, flushIntervalMs: 20 } } });
    await get(gw, '/v1/orders', { traceparent: `00-${TRACE}-${PARENT}-00` });
    await get(gw, '/v1/orders', { traceparent: VALID });
    await expect.poll(() => receiver.spans().length, { timeout: 3000 }).toBe(1);
    await sleep(100);
    expect(receiver.spans().map((s) => s.traceId)).toEqual([TRACE]);
  });

  it("samples a share of the traces it starts (sampleRatio), and keeps a client's sampled flag", async () => {
    const receiver = await startReceiver();
    const { upstream, gw } = await setup({
      tracing: { otlp: { endpoint: receiver.endpoint, flushIntervalMs: 20, sampleRatio: 0.5 } },
    });
    const requests = 200;
    for (let i = 0; i < requests; i++) await get(gw, `/v1/r${i}`);
    const flags = upstream.records.map((r) => parseTraceParent(r.headers['traceparent'])!.sampled);
    const sampled = flags.filter(Boolean).length;
    // Binomial(200, 0.5): outside 60-140 about once in 10^8 runs.
    expect(sampled).toBeGreaterThan(60);
    expect(sampled).toBeLessThan(140);
    await expect.poll(() => receiver.spans().length, { timeout: 5000 }).toBe(sampled);
    // Exported are exactly the sampled ones, by trace id.
    const exported = new Set(receiver.spans().map((s) => s.traceId));
    for (const record of upstream.records) {
      const sent = parseTraceParent(record.headers['traceparent'])!;
      expect(exported.has(sent.traceId)).toBe(sent.sampled);
    }
  });

  it("with sampleRatio 0 starts unsampled traces, and still exports a client's sampled one", async () => {
    const receiver = await startReceiver();
    const { upstream, gw } = await setup({
      tracing: { otlp: { endpoint: receiver.endpoint, flushIntervalMs: 20, sampleRatio: 0 } },
    });
    await get(gw, '/v1/new');
    expect(sentUpstream(upstream).sampled).toBe(false);
    await get(gw, '/v1/continued', { traceparent: VALID });
    await expect.poll(() => receiver.spans().length, { timeout: 3000 }).toBe(1);
    expect(receiver.spans()[0]!.traceId).toBe(TRACE);
  });

  it('batches: a full batch leaves at once, in one request', async () => {
    const receiver = await startReceiver();
    const { gw } = await setup({
      tracing: { otlp: { endpoint: receiver.endpoint, maxBatchSpans: 5, flushIntervalMs: 60_000 } },
    });
    for (let i = 0; i < 5; i++) await get(gw, `/v1/n${i}`);
    await expect.poll(() => receiver.bodies.length, { timeout: 3000 }).toBe(1);
    expect(receiver.spans()).toHaveLength(5);
  });

  it('requests never wait for a collector that hangs; spans past the queue are dropped and counted', async () => {
    const receiver = await startReceiver(() => {}); // never answers
    const exporter = createOtlpExporter(
      { ...defaults(), endpoint: receiver.endpoint, maxQueueSpans: 3, maxBatchSpans: 2, timeoutMs: 300 },
      pino({ level: 'silent' }),
    );
    // record() is synchronous: what it decided is counted before it returns, with the
    // collector still holding the first request. Two went out in it, three wait, five had no room.
    for (let i = 0; i < 10; i++) expect(exporter.record(span(i))).toBeUndefined();
    expect(exporter.stats()).toMatchObject({ queued: 3, dropped: 5, exported: 0 });
    await expect.poll(() => exporter.stats().failedRequests, { timeout: 3000 }).toBeGreaterThan(0);
    await exporter.close();
    expect(exporter.stats()).toMatchObject({ exported: 0, dropped: 10, queued: 0 });
  });

  it('a collector that is down costs the spans, not the requests', async () => {
    const receiver = await startReceiver((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    const { gw } = await setup({ tracing: { otlp: { endpoint: receiver.endpoint, flushIntervalMs: 10 } } });
    for (let i = 0; i < 3; i++) expect((await get(gw, '/v1/orders')).statusCode).toBe(200);
    await expect.poll(() => receiver.requests.length, { timeout: 3000 }).toBeGreaterThan(0);
    await expect.poll(() => gw.logText(), { timeout: 3000 }).toMatch(/span export refused with status 503/);
    const metrics = await (await request(`${gw.adminOrigin}/metrics`)).body.text();
    expect(metrics).toMatch(/^portico_trace_spans_dropped [1-9]/m);
    expect(metrics).toMatch(/^portico_trace_spans_exported 0$/m);
  });

  it('flushes what is queued when the gateway closes', async () => {
    const receiver = await startReceiver();
    const { gw } = await setup({
      tracing: { otlp: { endpoint: receiver.endpoint, flushIntervalMs: 60_000 } },
    });
    await get(gw, '/v1/orders');
    expect(receiver.bodies).toHaveLength(0);
    await gw.close();
    cleanups.splice(cleanups.length - 1, 1);
    expect(receiver.spans()).toHaveLength(1);
  });

  it('refuses an endpoint that is not an http(s) URL', () => {
    expect(() => parseConfig({ tracing: { otlp: { endpoint: 'ftp://collector/v1/traces' } } })).toThrow(
      /tracing\.otlp\.endpoint: must be an http: or https: URL/,
    );
  });
});

/** The export settings' defaults, as the config fills them. */
function defaults() {
  return parseConfig({}).config.tracing.otlp;
}

function span(i: number): FinishedSpan {
  return {
    traceId: newTraceId(),
    spanId: newSpanId(),
    name: `GET /v1/${i}`,
    startMs: Date.now(),
    endMs: Date.now() + 1,
    error: false,
    attributes: {},
  };
}
