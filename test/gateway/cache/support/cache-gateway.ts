/**
 * The real gateway, built by gateway/build.ts, on a plain HTTP socket for the cache tests: the
 * whole pipeline, with a stand-in authenticate stage (principal from
 * `Authorization: Test <customer> [scope,scope]`), no rate-limit policies, a manual clock,
 * and one route to the test's origin.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { Redis } from 'ioredis';
import { request as undiciRequest, Agent } from 'undici';
import { parseAssertionKeys } from '../../../../shared/assertion-keys.ts';
import type { AssertionKey } from '../../../../shared/identity-assertion.ts';
import { buildGateway } from '../../../../gateway/build.ts';
import type { HttpCache } from '../../../../gateway/cache/engine/http-cache.ts';
import type { CacheConfig } from '../../../../gateway/config/schema/cache.ts';
import { parseConfig } from '../../../../gateway/config/load.ts';
import { createLogger } from '../../../../gateway/observability/logger.ts';
import type { RequestFacts, Stage } from '../../../../gateway/pipeline/context.ts';
import type { RouteDefinition } from '../../../../gateway/config/schema/routes.ts';

export const PROXY_CONFIG = {
  trustProxy: false,
  connectionsPerUpstream: 16,
  connectTimeoutMs: 2000,
  responseTimeoutMs: 5000,
  bodyTimeoutMs: 5000,
  keepAliveTimeoutMs: 4000,
  retries: 0,
};

export const CACHE_DEFAULTS: CacheConfig = {
  enabled: true,
  maxBytes: 8 * 1024 * 1024,
  maxOwnerShare: 0.125,
  maxEntryBytes: 64 * 1024,
  heuristicFraction: 0.1,
  maxHeuristicSeconds: 86400,
  targetedFields: ['portico-cache-control', 'cdn-cache-control'],
};

/** A manual clock: starts on a whole second (Date has one-second resolution). */
export interface Clock {
  now: () => number;
  advance(seconds: number): void;
  /** The HTTP-date of now, for origin responses. */
  date(): string;
}

export function createClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)): Clock {
  let t = start;
  return {
    now: () => t,
    advance(seconds) {
      t += seconds * 1000;
    },
    date: () => new Date(t).toUTCString(),
  };
}

export interface CacheGatewayOptions {
  upstream: string;
  cache?: Partial<CacheConfig>;
  route?: Partial<RouteDefinition>;
  clock?: Clock;
  /** Shared invalidations: the gateway's Redis connection (it opens its own subscriber). */
  redis?: Redis | undefined;
  /** Replicas that share invalidations share this; it keeps test files apart on one Redis. */
  channel?: string;
  /** Keys the upstream verifies (the real service's); a fresh key otherwise. */
  assertionKeys?: readonly AssertionKey[];
}

export interface CacheGateway {
  url: string;
  cache: HttpCache;
  /** ctx.facts of each request, in arrival order (what the audit record gets). */
  facts: RequestFacts[];
  get(path: string, headers?: Record<string, string>): Promise<TestResponse>;
  send(method: string, path: string, headers?: Record<string, string>, body?: string): Promise<TestResponse>;
  /** Cuts the gateway's invalidation subscriber connection on the Redis server (it reconnects). */
  dropInvalidationSubscriber(): Promise<void>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const keys = parseAssertionKeys(`test:${randomBytes(32).toString('base64')}`);

/** Sets ctx.upstream.principal from `Authorization: Test <customer> [scopes]`, as authenticate would. */
const testAuthenticate: Stage = async (ctx, next) => {
  const match = /^Test (\S+)(?: (\S+))?$/.exec(ctx.req.headers.authorization ?? '');
  if (match !== null) {
    ctx.upstream.principal = {
      subject: `user-${match[1]}`,
      customerId: match[1] ?? '',
      scopes: (match[2] ?? '').split(',').filter((s) => s !== ''),
      authMethod: 'jwt',
    };
  }
  await next();
};

export async function startCacheGateway(options: CacheGatewayOptions): Promise<CacheGateway> {
  const log = createLogger({
    level: 'warn',
    destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }),
  });
  const route: RouteDefinition = {
    prefix: '/v1',
    upstream: options.upstream,
    auth: 'none',
    cache: true,
    ...options.route,
  };
  const { config } = parseConfig({
    routes: [route],
    proxy: PROXY_CONFIG,
    cache: { ...CACHE_DEFAULTS, ...options.cache },
    rateLimits: { policies: [] },
  });
  // Redis channels are named after the connection's key prefix: the test's channel becomes it.
  // The name lets a test find the gateway's own subscriber connection on the server.
  const connectionName = `portico-cache-test-${randomBytes(6).toString('hex')}`;
  const redis = options.redis?.duplicate({ keyPrefix: `${options.channel ?? 'unused'}:`, connectionName });
  const facts: RequestFacts[] = [];
  const authenticate: Stage = async (ctx, next) => {
    facts.push(ctx.facts);
    await testAuthenticate(ctx, next);
  };
  const gateway = await buildGateway(
    config,
    { log, assertionKeys: options.assertionKeys ?? keys, ...(redis === undefined ? {} : { redis }) },
    {
      stages: { authenticate },
      ...(options.clock === undefined ? {} : { now: options.clock.now }),
    },
  );
  const server: Server = createServer(gateway.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const agent = new Agent({ keepAliveTimeout: 1000 });
  const send = async (method: string, path: string, headers: Record<string, string> = {}, body?: string) => {
    const response = await undiciRequest(`${url}${path}`, {
      method: method as 'GET',
      headers,
      dispatcher: agent,
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.body.text();
    const flat: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers))
      if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
    return { status: response.statusCode, headers: flat, body: text };
  };
  return {
    url,
    cache: gateway.cache,
    facts,
    get: (path, headers) => send('GET', path, headers),
    async dropInvalidationSubscriber() {
      if (redis === undefined) throw new Error('this gateway has no Redis');
      // The subscribers are the gateway's duplicates of `redis`: same name, in subscribed mode.
      // CLIENT LIST does not name their channels, and the rate limiter's fleet-join listener
      // is one too: every one is cut, so the invalidation bus's is surely among them.
      const clients = String(await redis.client('LIST')).split('\n');
      const ids = clients
        .filter((line) => line.includes(`name=${connectionName} `) && !line.includes(' sub=0 '))
        .map((line) => /(?:^| )id=(\d+)/.exec(line)?.[1])
        .filter((id) => id !== undefined);
      if (ids.length === 0) throw new Error('no invalidation subscriber connected');
      for (const id of ids) await redis.client('KILL', 'ID', id);
    },
    send,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await agent.close();
      await gateway.close();
      redis?.disconnect();
    },
  };
}
