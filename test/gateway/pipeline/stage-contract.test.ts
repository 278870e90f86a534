/**
 * The stage contract from the client's side: a refusal by a later stage, the proxy's own 502
 * and a bug in a stage all come back through the response side of every earlier stage, so
 * they carry the request id and the rate-limit headers like any upstream answer. And what the
 * types cannot say (stage-contract.unit.test.ts has what they can): no stage writes the
 * client's request, what goes upstream is `ctx.upstream`, a context keeps the one shape it
 * was made with, and a fork leaves the request it was made from as it was.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpProblem } from '../../../shared/errors.ts';
import type { GatewayContext, Stage } from '../../../gateway/pipeline/context.ts';
import { createHygieneStage } from '../../../gateway/stages/hygiene.ts';
import { startRecordingUpstream, startTestGateway, type TestGateway } from '../support/harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const LIMITS = { rateLimits: { policies: [{ name: 'everyone', key: 'ip', limit: 100, window: '60s' }] } };

async function gatewayWith(upstream: string, cache?: Stage): Promise<TestGateway> {
  const gateway = await startTestGateway(
    upstream,
    LIMITS,
    {},
    undefined,
    cache === undefined ? {} : { stages: { cache } },
  );
  cleanups.push(() => gateway.close());
  return gateway;
}

async function get(gateway: TestGateway, path = '/v1/orders') {
  const response = await request(`${gateway.origin}${path}`, {
    dispatcher: gateway.agent,
    headers: { 'x-request-id': 'contract-1' },
  });
  return {
    status: response.statusCode,
    headers: response.headers,
    body: (await response.body.json()) as Record<string, unknown>,
  };
}

function expectEarlierStagesRan(answer: Awaited<ReturnType<typeof get>>): void {
  // request-id (first stage) and rate-limit (before the cache) both ran on the way back.
  expect(answer.headers['x-request-id']).toBe('contract-1');
  expect(answer.headers['ratelimit-policy']).toBe('"everyone";q=100;w=60');
  expect(answer.headers['ratelimit']).toMatch(/^"everyone";r=99;t=\d+$/);
  expect(answer.headers['content-type']).toBe('application/problem+json');
  expect(answer.headers['cache-control']).toBe('no-store');
}

describe('a refusal goes back through the earlier stages', () => {
  it('a later stage refusing with a problem', async () => {
    const upstream = await startRecordingUpstream();
    cleanups.push(() => upstream.close());
    const refuse: Stage = () =>
      Promise.reject(
        new HttpProblem('ERR_GATEWAY_TIMEOUT', 'refused by a later stage', {
          headers: { 'Retry-After': '7' },
        }),
      );
    const answer = await get(await gatewayWith(upstream.url, refuse));
    expect(answer.status).toBe(504);
    expect(answer.body).toMatchObject({
      status: 504,
      detail: 'refused by a later stage',
      instance: '/v1/orders',
    });
    expect(answer.headers['retry-after']).toBe('7');
    expectEarlierStagesRan(answer);
    expect(upstream.records).toHaveLength(0);
  });

  it("the proxy's 502 when the upstream refuses the connection", async () => {
    const upstream = await startRecordingUpstream();
    const closedUrl = upstream.url;
    await upstream.close();
    const answer = await get(await gatewayWith(closedUrl));
    expect(answer.status).toBe(502);
    expect(answer.body).toMatchObject({ code: 'ERR_BAD_GATEWAY' });
    expectEarlierStagesRan(answer);
  });

  it('a bug in a stage is a 500 problem, logged, and the gateway goes on serving', async () => {
    const upstream = await startRecordingUpstream();
    cleanups.push(() => upstream.close());
    let calls = 0;
    const flaky: Stage = async (_ctx, next) => {
      if (++calls === 1) throw new TypeError('a stage bug');
      await next();
    };
    const gateway = await gatewayWith(upstream.url, flaky);
    const answer = await get(gateway);
    expect(answer.status).toBe(500);
    expect(answer.body).toMatchObject({ code: 'ERR_INTERNAL' });
    expectEarlierStagesRan(answer);
    expect(gateway.logs.some((line) => line['msg'] === 'unexpected error' && line['stage'] === 'cache')).toBe(
      true,
    );
    const next = await get(gateway);
    expect(next.status).toBe(200);
    expect(next.headers['x-request-id']).toBe('contract-1');
  });
});

/** What the watcher saw of one request, before the stages after it and once they were done. */
interface Watched {
  clientHeaders: { before: Record<string, unknown>; after: Record<string, unknown> };
  shape: { before: string[]; after: string[] };
  upstreamShape: { before: string[]; after: string[] };
  /** What ctx.upstream said would go up as Accept-Encoding, once the stages were done. */
  acceptEncodingUp: string | undefined;
  fork: Record<string, unknown>;
}

/**
 * In the hygiene stage's place, running it: third in the chain, so every stage after it, the
 * proxy included, has come and gone, both ways, when it looks again.
 */
function watcher(watched: Watched[]): Stage {
  const hygiene = createHygieneStage({ maxUriBytes: 8192 });
  return async (ctx, next) => {
    const clientBefore = { ...ctx.req.headers };
    const shapeBefore = Object.keys(ctx);
    const upstreamBefore = Object.keys(ctx.upstream);
    await hygiene(ctx, next);
    watched.push({
      clientHeaders: { before: clientBefore, after: { ...ctx.req.headers } },
      shape: { before: shapeBefore, after: Object.keys(ctx) },
      upstreamShape: { before: upstreamBefore, after: Object.keys(ctx.upstream) },
      acceptEncodingUp: ctx.upstream.headers.get('accept-encoding'),
      fork: forkFacts(ctx),
    });
  };
}

/** A fork's stages at work on it: what the fork has, and whether the request it came from changed. */
function forkFacts(ctx: GatewayContext): Record<string, unknown> {
  const { response } = ctx;
  const fork = ctx.fork();
  const had = { body: fork.upstream.body, requestId: fork.upstream.requestId, route: fork.upstream.route };
  fork.upstream.headers.set('x-fork', 'yes');
  fork.upstream.route = undefined;
  fork.upstream.principal = { subject: 's', customerId: 'c', scopes: [], authMethod: 'apikey', keyId: 'k' };
  fork.response = { status: 204, headers: {}, body: null };
  fork.facts.cache = 'fork';
  fork.interim(103, { link: '</app.css>; rel=preload' });
  return {
    bodyless: had.body === null,
    sameId: had.requestId === ctx.upstream.requestId && had.requestId !== '',
    sameRoute: had.route === ctx.upstream.route,
    headerLeaked: ctx.upstream.headers.get('x-fork'),
    routeKept: ctx.upstream.route?.prefix,
    principal: ctx.upstream.principal,
    responseKept: ctx.response === response,
    cacheFact: ctx.facts.cache,
    ownSignal: fork.signal !== ctx.signal,
  };
}

describe('what the types cannot check', () => {
  const APP = 'https://app.example';

  async function watchedGateway() {
    const upstream = await startRecordingUpstream((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.setHeader('cache-control', 'public, max-age=60');
        res.end(JSON.stringify({ ok: true, padding: 'x'.repeat(2000) }));
      });
    });
    cleanups.push(() => upstream.close());
    const watched: Watched[] = [];
    const gateway = await startTestGateway(
      upstream.url,
      {
        ...LIMITS,
        routes: [
          { prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true, cors: { origins: [APP] } },
        ],
      },
      {},
      undefined,
      { stages: { hygiene: watcher(watched) } },
    );
    cleanups.push(() => gateway.close());
    const send = async (method: string, headers: Record<string, string>, body?: string) => {
      const response = await request(`${gateway.origin}/v1/orders`, {
        dispatcher: gateway.agent,
        method: method as 'GET',
        headers,
        ...(body === undefined ? {} : { body }),
      });
      await response.body.arrayBuffer();
      return response.statusCode;
    };
    return { upstream, watched, send };
  }

  it("no stage writes the client's request: the negotiated encoding goes up by ctx.upstream", async () => {
    const { upstream, watched, send } = await watchedGateway();
    expect(await send('GET', { 'accept-encoding': 'gzip, deflate, br', origin: APP })).toBe(200);
    expect(await send('GET', { 'accept-encoding': 'br;q=1, gzip;q=0.5', origin: APP })).toBe(200);
    expect(watched).toHaveLength(2);
    for (const seen of watched) expect(seen.clientHeaders.after).toEqual(seen.clientHeaders.before);
    expect(watched[0]!.clientHeaders.after['accept-encoding']).toBe('gzip, deflate, br');
    // One spelling per choice upstream, and the second request a hit on the first's variant.
    expect(watched.map((seen) => seen.acceptEncodingUp)).toEqual(['br', 'br']);
    expect(upstream.records).toHaveLength(1);
    expect(upstream.records[0]!.headers['accept-encoding']).toBe('br');
  });

  it('a context keeps the shape it was made with, whatever the stages did', async () => {
    const { watched, send } = await watchedGateway();
    await send('GET', { origin: APP }); // a miss, stored
    await send('GET', { origin: APP }); // a hit
    await send('OPTIONS', { origin: APP, 'access-control-request-method': 'PUT' }); // a preflight
    await send('POST', { 'content-type': 'application/json' }, '{"a":1}'); // a body, an invalidation
    expect(watched).toHaveLength(4);
    const [first] = watched;
    for (const seen of watched) {
      expect(seen.shape.after).toEqual(seen.shape.before);
      expect(seen.shape.before).toEqual(first!.shape.before);
      expect(seen.upstreamShape.after).toEqual(seen.upstreamShape.before);
      expect(seen.upstreamShape.before).toEqual(first!.upstreamShape.before);
    }
  });

  it('a fork leaves the request it was made from as it was', async () => {
    const { watched, send } = await watchedGateway();
    await send('POST', { 'content-type': 'application/json' }, '{"a":1}');
    expect(watched[0]!.fork).toEqual({
      bodyless: true,
      sameId: true,
      sameRoute: true,
      headerLeaked: undefined,
      routeKept: '/v1',
      principal: undefined,
      responseKept: true,
      cacheFact: 'invalidated',
      ownSignal: true,
    });
  });
});
