/**
 * Long request targets against the real service, with a real token: the service's parser takes
 * a 16 KiB head, and the gateway sends the target twice (the request line and the identity
 * assertion), so a target the gateway accepts must still fit there. Past the gateway's limit the
 * answer is its own 414 problem, never the service's bare 431.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../gateway/config/load.ts';
import { startPortico, type Portico } from '../../e2e/support/portico.ts';

let portico: Portico;
let token: string;
beforeAll(async () => {
  portico = await startPortico();
  token = await portico.token('cust-long-target');
});
afterAll(async () => {
  await portico?.close();
});

const { maxUriBytes } = parseConfig({}).config.listener.limits;
/** `/v1/orders/<id>` padded to exactly `bytes` bytes of target. */
const target = (bytes: number) => `/v1/orders/${'a'.repeat(bytes - '/v1/orders/'.length)}`;

describe('long request targets', () => {
  it('a 9000-byte path is a 414 problem from the gateway', async () => {
    const reply = await portico.call('GET', `/v1/orders/${'a'.repeat(9000)}`, { token });
    expect(reply.status).toBe(414);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(reply.body).toMatchObject({ status: 414, code: 'ERR_URI_TOO_LONG' });
  });

  it('a target of exactly the default limit reaches the service and gets its answer, not a 431', async () => {
    const reply = await portico.call('GET', target(maxUriBytes), { token });
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(reply.body).toMatchObject({ status: 404, code: 'ERR_NOT_FOUND' });
  });

  it('the longest target with a token and other headers up to the gateway head limit gets the service answer', async () => {
    // The attack review's case: 4096 bytes of target, a valid token and about 6.8 KB of other
    // headers, 10.9 KB in all. Then the same padded up to what the gateway's parser takes.
    const { maxHeaderBytes } = parseConfig({}).config.listener.limits;
    for (const otherBytes of [6800, maxHeaderBytes - maxUriBytes - 1500]) {
      const headers: Record<string, string> = {};
      for (let i = 0; otherBytes - i * 1000 > 0; i++)
        headers[`x-pad-${i}`] = 'p'.repeat(Math.min(990, otherBytes - i * 1000));
      const reply = await portico.call('GET', target(maxUriBytes), { token, headers });
      expect(reply.status, `${otherBytes} bytes of other headers`).not.toBe(431);
      expect(reply.headers['content-type']).toBe('application/problem+json');
      expect(reply.body).toMatchObject({ status: 404, code: 'ERR_NOT_FOUND' });
    }
  });

  it('one byte past it is the 414', async () => {
    const reply = await portico.call('GET', target(maxUriBytes + 1), { token });
    expect(reply.body).toMatchObject({ status: 414, code: 'ERR_URI_TOO_LONG' });
  });
});
