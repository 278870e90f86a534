/**
 * Age (RFC 9111 sections 4.2.3 and 5.1) and the update of a stored response from a 304
 * (section 4.3.4), over real sockets with a manual clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClock, startCacheGateway, type CacheGateway, type Clock } from './support/cache-gateway.ts';
import { startOrigin, type OriginHandler, type TestOrigin } from './support/origin.ts';

let origin: TestOrigin | undefined;
let gateway: CacheGateway | undefined;
let clock: Clock;

async function teardown(): Promise<void> {
  const [g, o] = [gateway, origin];
  gateway = undefined;
  origin = undefined;
  await g?.close();
  await o?.close();
}

afterEach(teardown);

async function setup(handler: OriginHandler): Promise<CacheGateway> {
  clock = createClock();
  const started = await startOrigin(handler);
  origin = started;
  gateway = await startCacheGateway({ upstream: started.url, clock });
  return gateway;
}

const at = (offsetSeconds: number) =>
  new Date(Date.UTC(2026, 10, 22, 12, 0, 0) + offsetSeconds * 1000).toUTCString();

describe('RFC 9111 section 5.1: an Age that is not one non-negative integer', () => {
  const cases: [string, string | string[], boolean][] = [
    ['non-numeric', 'abc', true],
    ['negative', '-7200', true],
    ['a fraction', '7200.0', true],
    ['trailing characters', '7200s', true],
    ['a list: the first member counts', '7200, 0', false],
    ['a list starting with 0', '0,7200', true],
    ['two field lines: the first counts', ['7200', '0'], false],
    ['two field lines starting with 0', ['0', '7200'], true],
  ];
  for (const [name, age, reused] of cases)
    it(`${name} (${JSON.stringify(age)}) ${reused ? 'is ignored' : 'makes it stale'}`, async () => {
      const g = await setup(() => ({
        headers: { date: clock.date(), 'cache-control': 'max-age=3600', age },
        body: 'x',
      }));
      await g.get('/v1/things');
      const second = await g.get('/v1/things');
      expect(second.headers['cache-status']?.startsWith('Portico; hit')).toBe(reused);
      expect(origin?.count()).toBe(reused ? 1 : 2);
    });
});

describe('RFC 9111 section 4.2.3: Age generated on every reuse', () => {
  it('sends the current age on each hit and on a 304 from the cache, counting an inner Age', async () => {
    const g = await setup(() => ({
      headers: { date: clock.date(), 'cache-control': 'max-age=600', etag: '"a"', age: '30' },
      body: 'x',
    }));
    expect((await g.get('/v1/things')).headers['age']).toBe('30');
    clock.advance(7);
    expect((await g.get('/v1/things')).headers['age']).toBe('37');
    clock.advance(3);
    const notModified = await g.get('/v1/things', { 'if-none-match': '"a"' });
    expect(notModified.status).toBe(304);
    expect(notModified.headers['age']).toBe('40');
    expect(origin?.count()).toBe(1);
  });
});

describe('RFC 9111 section 4.3.4: a 304 updates the stored response', () => {
  it("replaces Date and Expires with the 304's, which then govern freshness", async () => {
    const g = await setup((request) =>
      request.headers['if-none-match'] === '"v"'
        ? { status: 304, headers: { date: clock.date(), etag: '"v"', expires: at(11 + 100) } }
        : { headers: { date: clock.date(), etag: '"v"', expires: at(10) }, body: 'v' },
    );
    await g.get('/v1/things');
    clock.advance(11);
    const revalidated = await g.get('/v1/things');
    expect(revalidated.headers['cache-status']).toBe('Portico; fwd=stale; fwd-status=304');
    expect(revalidated.headers['date']).toBe(at(11));
    expect(revalidated.headers['expires']).toBe(at(111));
    clock.advance(50);
    const hit = await g.get('/v1/things');
    expect(hit.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(hit.headers['age']).toBe('50');
    expect(origin?.count()).toBe(2);
  });

  it('keeps Age right: the stored Age does not survive a 304 without one', async () => {
    const g = await setup((request) =>
      request.headers['if-none-match'] === '"v"'
        ? { status: 304, headers: { date: clock.date(), etag: '"v"' } }
        : {
            headers: { date: clock.date(), etag: '"v"', 'cache-control': 'max-age=60', age: '50' },
            body: 'v',
          },
    );
    await g.get('/v1/things');
    clock.advance(15);
    const revalidated = await g.get('/v1/things');
    expect(revalidated.headers['cache-status']).toBe('Portico; fwd=stale; fwd-status=304');
    expect(revalidated.headers['age']).toBe('0');
    clock.advance(30);
    const hit = await g.get('/v1/things');
    expect(hit.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(hit.headers['age']).toBe('30');
    expect(origin?.count()).toBe(2);
  });

  it('dates a 304 without Date on receipt (RFC 9110 section 6.6.1), so the update is not born stale', async () => {
    const g = await setup((request) =>
      request.headers['if-none-match'] === '"v"'
        ? { status: 304, headers: { etag: '"v"' }, sendDate: false }
        : { headers: { date: clock.date(), etag: '"v"', 'cache-control': 'max-age=10' }, body: 'v' },
    );
    await g.get('/v1/things');
    clock.advance(11);
    const revalidated = await g.get('/v1/things');
    expect(revalidated.headers['date']).toBe(at(11));
    clock.advance(5);
    expect((await g.get('/v1/things')).headers['cache-status']).toMatch(/^Portico; hit/);
    expect(origin?.count()).toBe(2);
  });
});
