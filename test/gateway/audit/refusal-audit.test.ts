/**
 * Every answer the gateway gives is an audit record, the ones its HTTP parser gives included:
 * an oversized header (431), a smuggling attempt (400), a CONNECT (405) and a slow header
 * (408), each sent over a raw TLS socket, answered with problem+json, found in the audit log
 * by the request id the client was given, and the chain still verifies afterwards.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { verifyAuditFile } from '../../../gateway/audit/verify-chain.ts';
import {
  auditRecordOf,
  type AuditLine,
  rawRequest,
  sleep,
  startRecordingUpstream,
  startTestGateway,
  type RawResponse,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const MAX_HEADER = 4096;
let upstream: RecordingUpstream;
let gw: TestGateway;
let auditLogPath: string;
let closed = false;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  auditLogPath = join(mkdtempSync(join(tmpdir(), 'portico-refusal-audit-')), 'audit.log');
  gw = await startTestGateway(
    upstream.url,
    // One TLS record holds the whole oversized head, so the parser sees its request line.
    { listener: { limits: { maxHeaderBytes: MAX_HEADER, headersTimeoutMs: 600, requestTimeoutMs: 1200 } } },
    { auditLogPath },
  );
});
afterAll(async () => {
  if (!closed) await gw.close();
  await upstream.close();
});
beforeEach(() => {
  upstream.records.length = 0;
});

/** The record the gateway wrote for `requestId` (support/harness.ts). */
const auditRecord = (requestId: string) => auditRecordOf(auditLogPath, requestId);

function expectProblem(response: RawResponse, status: number, code: string): string {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toBe('application/problem+json');
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(JSON.parse(response.body)).toMatchObject({ status, code });
  const requestId = response.headers['x-request-id'] ?? '';
  expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
  return requestId;
}

const send = (raw: string) => rawRequest(gw.port, gw.certificate.cert, raw);

describe('refusals of the HTTP parser are audited', () => {
  it('an oversized header: 431 problem and an audit record with what was known of the request', async () => {
    const response = await send(
      `GET /v1/x?q=secret HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(8192)}\r\n\r\n`,
    );
    const requestId = expectProblem(response, 431, 'ERR_HEADERS_TOO_LARGE');
    expect(await auditRecord(requestId)).toMatchObject({
      requestId,
      status: 431,
      code: 'ERR_HEADERS_TOO_LARGE',
      clientAddress: '127.0.0.1',
      method: 'GET',
      // The query is never written: it can carry credentials.
      path: '/v1/x',
    });
    expect(upstream.records).toEqual([]);
  });

  it('a smuggling request (Content-Length with Transfer-Encoding): 400 problem and an audit record', async () => {
    const response = await send(
      'POST /v1/orders HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    );
    const requestId = expectProblem(response, 400, 'ERR_BAD_REQUEST');
    expect(await auditRecord(requestId)).toMatchObject({
      requestId,
      status: 400,
      code: 'ERR_BAD_REQUEST',
      clientAddress: '127.0.0.1',
      method: 'POST',
      path: '/v1/orders',
    });
    await sleep(50);
    expect(upstream.records).toEqual([]);
  });

  it('a CONNECT: 405 problem instead of a silently dropped socket, and an audit record', async () => {
    const response = await send(
      'CONNECT internal.example:443 HTTP/1.1\r\nHost: internal.example:443\r\n\r\n',
    );
    const requestId = expectProblem(response, 405, 'ERR_METHOD_NOT_ALLOWED');
    expect(response.headers['allow']).toBeDefined();
    expect(await auditRecord(requestId)).toMatchObject({
      requestId,
      status: 405,
      code: 'ERR_METHOD_NOT_ALLOWED',
      clientAddress: '127.0.0.1',
      method: 'CONNECT',
    });
    expect(upstream.records).toEqual([]);
  });

  it('a header that never finishes: 408 problem and an audit record', async () => {
    const response = await send('GET /v1/x HTTP/1.1\r\nHost: a\r\n');
    const requestId = expectProblem(response, 408, 'ERR_REQUEST_TIMEOUT');
    expect(await auditRecord(requestId)).toMatchObject({
      requestId,
      status: 408,
      code: 'ERR_REQUEST_TIMEOUT',
      clientAddress: '127.0.0.1',
    });
    expect(upstream.records).toEqual([]);
  });

  it('leaves a chain that verifies, the refusals among the ordinary records', async () => {
    const ok = await send('GET /v1/x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    expect(ok.status).toBe(200);
    const refused = await send('GET /v1/x HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n');
    expectProblem(refused, 400, 'ERR_BAD_REQUEST');
    await gw.close();
    closed = true;
    const report = await verifyAuditFile(auditLogPath);
    expect(report).toMatchObject({ ok: true });
    const statuses = readFileSync(auditLogPath, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => (JSON.parse(line) as AuditLine)['status']);
    expect(statuses).toEqual([431, 400, 405, 408, 200, 400]);
  });
});
