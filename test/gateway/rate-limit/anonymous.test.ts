/**
 * Requests refused before anyone is identified (issue 34 item 5), from the attacker's side:
 * a flood of requests without a credential to a protected path (401) or to a path no route
 * serves (404) is limited per client address (`rateLimits.anonymous`), answered 429 with
 * Retry-After past it, while a valid credential from the same address is still served.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../gateway/config/load.ts';
import { startPortico, type Portico } from '../../e2e/support/portico.ts';

let portico: Portico;
beforeAll(async () => {
  portico = await startPortico();
});
afterAll(async () => {
  await portico?.close();
});

describe('the anonymous limit', () => {
  it('answers 401s and 404s past the default limit with a 429 problem, and serves a valid token', async () => {
    const limit =
      (parseConfig({}).config.rateLimits as { anonymous?: { limit: number } }).anonymous?.limit ?? 120;
    const statuses: number[] = [];
    for (let i = 0; i < limit + 10; i++)
      statuses.push((await portico.call('GET', i % 2 === 0 ? '/v1/orders' : '/v9/nothing')).status);
    expect(statuses.slice(0, limit).every((status) => status === 401 || status === 404)).toBe(true);
    expect(statuses.slice(limit)).toEqual(Array<number>(10).fill(429));

    const refused = await portico.call('GET', '/v1/orders');
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(refused.body).toMatchObject({ code: 'ERR_RATE_LIMITED', status: 429 });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);

    const token = await portico.token(`cus_anon_${randomBytes(4).toString('hex')}`);
    expect((await portico.call('GET', '/v1/orders', { token })).status).toBe(200);
  });
});
