/**
 * HTTP/2 `:method` is a case-sensitive token (RFC 9110 §9.1), and nghttp2 passes any token on
 * (issue 34, item 4). `post` and `Post` passed a rate-limit policy matched on `POST` uncounted
 * and were forwarded as they were; `get` on a cached path was taken for an unsafe method and
 * purged the entry on every replica. HTTP/1.1's parser already refuses such methods. Over
 * HTTP/2 a method outside the set HTTP/1.1's parser takes (node:http's METHODS, case and all)
 * is now a 501 problem, before routing, limits or the cache see it.
 */
import { connect } from 'node:http2';
import { expect, it } from 'vitest';
import { useRecordingGateway } from '../support/harness.ts';

const running = useRecordingGateway();

async function h2(method: string, path: string): Promise<{ status: number; type: unknown; body: string }> {
  const session = connect(running.gw.origin, { ca: running.gw.certificate.cert });
  try {
    const stream = session.request({ ':method': method, ':path': path }, { endStream: true });
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      stream.once('response', resolve);
      stream.once('error', reject);
    });
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (body += chunk));
    await new Promise((resolve) => stream.once('end', resolve));
    return { status: Number(headers[':status']), type: headers['content-type'], body };
  } finally {
    session.close();
  }
}

it.each(['post', 'Post', 'get', 'FROB'])(
  '%s over HTTP/2: a 501 problem, nothing forwarded',
  async (method) => {
    const before = running.upstream.records.length;
    const answer = await h2(method, `/v1/method-${method}`);
    expect(answer.status).toBe(501);
    expect(answer.type).toBe('application/problem+json');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 501, code: 'ERR_METHOD_NOT_IMPLEMENTED' });
    expect(running.upstream.records.length).toBe(before);
  },
);

it.each(['GET', 'POST', 'PATCH'])('%s over HTTP/2 is served (control)', async (method) => {
  const answer = await h2(method, `/v1/method-control-${method}`);
  expect(answer.status).toBe(200);
});
