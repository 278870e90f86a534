/**
 * Collapsed misses over real sockets: the real gateway pipeline (gateway/build.ts) on a plain
 * HTTP socket in front of a scripted origin that holds its answers, so that every request of
 * a burst arrives while the first is still in flight.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startCacheGateway, type CacheGateway } from './support/cache-gateway.ts';
import { startOrigin, type OriginReply, type TestOrigin } from './support/origin.ts';
import { sleep } from '../support/harness.ts';

let origin: TestOrigin | undefined;
let gateway: CacheGateway | undefined;

afterEach(async () => {
  await gateway?.close();
  await origin?.close();
  gateway = undefined;
  origin = undefined;
});

/** When each request reached the origin, in milliseconds since the epoch. */
let arrivals: number[] = [];

/** An origin answering each request after `holdMs`, with the given fields. */
async function slowOrigin(holdMs: number, reply: (customer: string | undefined) => OriginReply) {
  arrivals = [];
  origin = await startOrigin(async (request) => {
    arrivals.push(Date.now());
    await sleep(holdMs);
    return reply(request.customer);
  });
  return origin;
}

const burst = (
  count: number,
  send: (i: number) => Promise<{ status: number; body: string; headers: Record<string, string> }>,
) => Promise.all(Array.from({ length: count }, (_, i) => send(i)));

describe('collapsed misses', () => {
  it('20 concurrent cold GETs make one upstream request, and all get its answer', async () => {
    const up = await slowOrigin(200, () => ({
      headers: { 'cache-control': 'public, max-age=60', 'content-type': 'application/json' },
      body: '{"n":1}',
    }));
    gateway = await startCacheGateway({ upstream: up.url });
    const answers = await burst(20, () => gateway!.get('/v1/catalog'));
    expect(up.count('/v1/catalog')).toBe(1);
    expect(answers.map((a) => a.status)).toEqual(Array<number>(20).fill(200));
    expect(new Set(answers.map((a) => a.body))).toEqual(new Set(['{"n":1}']));
    expect(answers.filter((a) => a.headers['cache-status']?.includes('detail=collapsed'))).toHaveLength(19);
  });

  it('never across customers: each partition has its own request in flight and gets its own answer', async () => {
    const up = await slowOrigin(200, (customer) => ({
      // The service's per-customer answers: stored for that customer only (RFC 9213).
      headers: { 'cache-control': 'private, no-cache', 'portico-cache-control': 'max-age=30' },
      body: JSON.stringify({ customer }),
    }));
    gateway = await startCacheGateway({ upstream: up.url });
    const answers = await burst(20, (i) =>
      gateway!.get('/v1/orders', { authorization: `Test ${i % 2 === 0 ? 'alice' : 'bob'} orders:read` }),
    );
    expect(up.count('/v1/orders')).toBe(2);
    answers.forEach((answer, i) =>
      expect(JSON.parse(answer.body)).toEqual({ customer: i % 2 === 0 ? 'alice' : 'bob' }),
    );
  });

  it('an answer that may not be stored sends the waiters upstream themselves', async () => {
    const up = await slowOrigin(150, () => ({ headers: { 'cache-control': 'no-store' }, body: 'x' }));
    gateway = await startCacheGateway({ upstream: up.url });
    const answers = await burst(5, () => gateway!.get('/v1/volatile'));
    expect(up.count('/v1/volatile')).toBe(5);
    // They waited for the first answer (held 150 ms), then went upstream together.
    const [first = 0, ...others] = arrivals;
    expect(others.every((at) => at - first >= 140)).toBe(true);

    // Remembered: the next burst for it goes upstream at once, nobody waits (hit-for-miss).
    arrivals.length = 0;
    await burst(5, () => gateway!.get('/v1/volatile'));
    expect(up.count('/v1/volatile')).toBe(10);
    expect(Math.max(...arrivals) - Math.min(...arrivals)).toBeLessThan(100);
    expect(answers.every((a) => a.status === 200 && a.body === 'x')).toBe(true);
  });

  it('callers with credentials but no principal are not collapsed (their answers are stored for no one)', async () => {
    const up = await slowOrigin(150, () => ({ headers: { 'cache-control': 'max-age=60' }, body: 'y' }));
    gateway = await startCacheGateway({ upstream: up.url });
    await burst(4, () => gateway!.get('/v1/shared', { authorization: 'Basic eDp5' }));
    expect(up.count('/v1/shared')).toBe(4);
  });

  it('waits no longer than maxWaitMs, then goes upstream itself', async () => {
    const up = await slowOrigin(800, () => ({
      headers: { 'cache-control': 'public, max-age=60' },
      body: 'z',
    }));
    gateway = await startCacheGateway({
      upstream: up.url,
      cache: { collapse: { enabled: true, maxWaitMs: 100 } },
    });
    const started = Date.now();
    const first = gateway.get('/v1/slow');
    await sleep(20);
    const second = gateway.get('/v1/slow');
    await sleep(250);
    // The second request gave up waiting after ~100 ms and went upstream while the first was held.
    expect(up.count('/v1/slow')).toBe(2);
    expect(Date.now() - started).toBeLessThan(700);
    expect((await first).body).toBe('z');
    expect((await second).body).toBe('z');
  });

  it('keys on the negotiated encoding: a br and an identity burst are two requests', async () => {
    const up = await slowOrigin(150, () => ({
      headers: { 'cache-control': 'public, max-age=60', 'content-type': 'text/plain' },
      body: 'w'.repeat(4000),
    }));
    gateway = await startCacheGateway({ upstream: up.url });
    await burst(10, (i) => gateway!.get('/v1/text', i % 2 === 0 ? { 'accept-encoding': 'br' } : {}));
    expect(up.count('/v1/text')).toBe(2);
  });

  it('with collapse off, every miss goes upstream', async () => {
    const up = await slowOrigin(150, () => ({
      headers: { 'cache-control': 'public, max-age=60' },
      body: 'v',
    }));
    gateway = await startCacheGateway({
      upstream: up.url,
      cache: { collapse: { enabled: false, maxWaitMs: 5000 } },
    });
    await burst(20, () => gateway!.get('/v1/catalog'));
    expect(up.count('/v1/catalog')).toBe(20);
  });
});
