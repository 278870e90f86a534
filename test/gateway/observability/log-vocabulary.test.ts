/**
 * Logs an operator can alert on: an HTTP/2 client that goes away abruptly (a TCP reset, what
 * browsers and load balancers do every day) is logged at debug, not warn; and the resource
 * service writes the gateway's line shape: ISO time and a `service` field, no epoch
 * milliseconds, pid or hostname.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as http2Connect } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../gateway/observability/logger.ts';
import {
  auditRecordOf,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
let upstream: RecordingUpstream;
let gw: TestGateway;
const auditLogPath = join(mkdtempSync(join(tmpdir(), 'portico-log-vocabulary-')), 'audit.log');
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(upstream.url, {}, { auditLogPath });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('an HTTP/2 client that resets its connection', () => {
  it('is logged at debug, not warn', async () => {
    const raw = netConnect(gw.port, '127.0.0.1');
    await new Promise((resolve) => raw.once('connect', resolve));
    const tls = tlsConnect({
      socket: raw,
      ca: gw.certificate.cert,
      servername: 'localhost',
      ALPNProtocols: ['h2'],
    });
    const session = http2Connect(gw.origin, { createConnection: () => tls });
    session.on('error', () => {});
    const status = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ':path': '/v1/reset' });
      stream.on('response', (headers) => resolve(Number(headers[':status'])));
      stream.on('error', reject);
      stream.resume();
    });
    expect(status).toBe(200);
    // A second request in flight, then the TCP connection reset under it.
    session.request({ ':path': '/v1/reset-again' }).on('error', () => {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    raw.resetAndDestroy();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const closed = gw.logs.filter((line) => line['msg'] === 'HTTP/2 connection closed on error');
    expect(closed.length).toBeGreaterThan(0);
    for (const line of closed)
      expect(line, JSON.stringify(line)).toMatchObject({ level: 20, code: 'ECONNRESET' });
    expect(
      gw.logs.filter((line) => (line['level'] as number) >= 40 && line['code'] === 'ECONNRESET'),
    ).toEqual([]);
  });
});

describe('the resource service log line', () => {
  it('has the gateway’s shape: ISO time, service, no pid or hostname', async () => {
    // Without DATABASE_URL the service logs one fatal line and exits: a line without a database.
    const stdout = await new Promise<string>((resolve) => {
      execFile(
        process.execPath,
        ['resource-service/main.ts'],
        { cwd: ROOT, env: { PATH: process.env['PATH'] }, timeout: 30_000 },
        (_error, out) => resolve(out),
      );
    });
    const line = JSON.parse(stdout.trim().split('\n')[0] ?? '{}') as Record<string, unknown>;
    let gatewayText = '';
    const gatewayLog = createLogger({
      destination: new Writable({
        write(chunk: Buffer, _encoding, callback) {
          gatewayText += chunk.toString();
          callback();
        },
      }),
    });
    gatewayLog.fatal('x');
    gatewayLog.flush();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const gatewayLine = JSON.parse(gatewayText.trim()) as Record<string, unknown>;

    expect(line['time']).toMatch(ISO_TIME);
    expect(line['service']).toBe('portico-resource-service');
    expect(line).not.toHaveProperty('pid');
    expect(line).not.toHaveProperty('hostname');
    expect(line).not.toHaveProperty('name');
    // The same keys, in the same order, as the gateway's line: level, time, service, msg.
    expect(Object.keys(line)).toEqual(Object.keys(gatewayLine));
  });
});

describe('the request line and the audit record', () => {
  it("name the same things alike: `path` the request's path, `route` the matched prefix", async () => {
    const response = await request(`${gw.origin}/v1/orders/42?token=secret`, { dispatcher: gw.agent });
    await response.body.dump();
    const requestId = String(response.headers['x-request-id']);
    const line = gw.logs.find((entry) => entry['msg'] === 'request' && entry['requestId'] === requestId);
    const record = await auditRecordOf(auditLogPath, requestId);
    expect(line).toMatchObject({ path: '/v1/orders/42', route: '/v1' });
    expect(record).toMatchObject({ path: '/v1/orders/42', route: '/v1' });
    // One time format in the gateway's lines, the service's (above) and the audit record.
    for (const entry of [line, record]) expect(entry?.['time']).toMatch(ISO_TIME);
  });

  it('are the words docs/operations.md names, each in both', async () => {
    const response = await request(`${gw.origin}/v1/words`, { dispatcher: gw.agent });
    await response.body.dump();
    const requestId = String(response.headers['x-request-id']);
    const line = gw.logs.find((entry) => entry['msg'] === 'request' && entry['requestId'] === requestId);
    const record = await auditRecordOf(auditLogPath, requestId);
    const doc = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    const logs = doc.slice(doc.indexOf('\n## Logs\n'), doc.indexOf('\n## The audit log\n'));
    const shared = ['requestId', 'traceId', 'method', 'path', 'route', 'status', 'time'];
    for (const field of shared) {
      expect(logs, field).toContain(`\`${field}\``);
      expect(line, field).toHaveProperty(field);
      expect(record, field).toHaveProperty(field);
    }
    expect(logs).toContain('`durationMs`');
    expect(line).toHaveProperty('durationMs');
    expect(logs).toContain('`latencyMs`');
    expect(record).toHaveProperty('latencyMs');
    expect(logs).toMatch(/`time` \(ISO 8601,\s+UTC, milliseconds\)/);
  });
});
