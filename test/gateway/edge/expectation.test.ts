/**
 * An `Expect` other than `100-continue` (issue 34, item 3). Node answers it itself with a bare
 * 417 when nothing listens for `checkExpectation`: no problem body, no nosniff, no HSTS, no
 * request id, no audit record, over HTTP/1.1 and HTTP/2 alike. The gateway answers it as every
 * other refusal: a 417 problem from the pipeline, nothing forwarded, and an audit record.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type ClientHttp2Session } from 'node:http2';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  auditRecordOf,
  rawRequest,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;
let auditLogPath: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  auditLogPath = join(mkdtempSync(join(tmpdir(), 'portico-expect-')), 'audit.log');
  gw = await startTestGateway(upstream.url, {}, { auditLogPath });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  if (auditLogPath !== undefined) rmSync(dirname(auditLogPath), { recursive: true, force: true });
});

/** The answer as a status, lower-case fields and the body's text. */
interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  body: string;
}

async function viaHttp1(expectation: string | undefined, path: string): Promise<Answer> {
  const expectLine = expectation === undefined ? '' : `Expect: ${expectation}\r\n`;
  const head = `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${expectLine}Connection: close\r\n\r\n`;
  const response = await rawRequest(gw.port, gw.certificate.cert, head);
  return { status: response.status, headers: response.headers, body: response.body };
}

async function viaHttp2(expectation: string | undefined, path: string): Promise<Answer> {
  const session: ClientHttp2Session = connect(gw.origin, { ca: gw.certificate.cert });
  try {
    const stream = session.request({
      ':path': path,
      ...(expectation === undefined ? {} : { expect: expectation }),
    });
    const headers = await new Promise<Record<string, string | undefined>>((resolve, reject) => {
      stream.once('response', (fields) => resolve(fields as Record<string, string | undefined>));
      stream.once('error', reject);
    });
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (body += chunk));
    await new Promise((resolve) => stream.once('end', resolve));
    return { status: Number(headers[':status']), headers, body };
  } finally {
    session.close();
  }
}

describe.each([
  ['HTTP/1.1', viaHttp1],
  ['HTTP/2', viaHttp2],
])('Expect over %s', (protocol, send) => {
  it('an expectation other than 100-continue: a 417 problem, audited, nothing forwarded', async () => {
    const path = `/v1/expect-${protocol.replace('/', '')}`;
    const before = upstream.records.length;
    const answer = await send('teapot', path);
    expect(answer.status).toBe(417);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answer.headers['strict-transport-security']).toBeDefined();
    expect(JSON.parse(answer.body)).toMatchObject({ status: 417, code: 'ERR_EXPECTATION_FAILED' });
    const requestId = answer.headers['x-request-id'] ?? '';
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(upstream.records.length).toBe(before);
    expect(await auditRecordOf(auditLogPath, requestId)).toMatchObject({ status: 417 });
  });

  it('a request without Expect is served (control)', async () => {
    const answer = await send(undefined, `/v1/expect-control-${protocol.replace('/', '')}`);
    expect(answer.status).toBe(200);
  });
});
