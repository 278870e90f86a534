/**
 * The service's limit on a request head: what the gateway accepts (16 KiB by default) plus what
 * it adds (the identity assertion, forwarded fields) fits, and a head past the limit is a 431
 * problem document, never Node's bare 431, which the gateway would relay without a body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startTestService } from '../support/service.ts';
import type { TestService } from '../support/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service.close();
});

/** `bytes` bytes of headers in fields under 1000 bytes each. */
function padding(bytes: number): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i * 990 < bytes; i++) headers[`x-pad-${i}`] = 'p'.repeat(Math.min(980, bytes - i * 990));
  return headers;
}

describe('the request head limit', () => {
  it("takes the gateway's 16 KiB and what the gateway adds", async () => {
    const client = service.as({ customerId: 'cus_head_limit' });
    const reply = await client.request('GET', '/v1/orders', { headers: padding(16 * 1024 + 2048) });
    expect(reply.status).toBe(200);
  });

  it('answers a head past it with a 431 problem document', async () => {
    const reply = await rawRequest(service.url, 'GET', '/v1/orders', { headers: padding(40 * 1024) });
    expect(reply.status).toBe(431);
    expect(reply.headers.get('content-type')).toBe('application/problem+json');
    expect(reply.body).toMatchObject({ status: 431, code: 'ERR_HEADERS_TOO_LARGE' });
  });
});
