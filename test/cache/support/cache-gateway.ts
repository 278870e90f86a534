/**
 * A gateway of the real stages that matter to the cache, on a real socket: a test
 * authenticate stage (principal from `Authorization: Test <customer> [scope,scope]`), the
 * route, the cache stage and the real proxy. startGateway takes no stage list, so this
 * assembles the same pipeline and writes the response the way gateway/server.ts does.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { request as undiciRequest, Agent } from 'undici';
import { parseAssertionKeys } from '../../../shared/assertion-keys.ts';
import type { AssertionKey } from '../../../shared/identity-assertion.ts';
import { HttpProblem, sendProblem } from '../../../shared/errors.ts';
import { createHttpCache, type HttpCache, type HttpCacheDeps } from '../../../gateway/cache/http-cache.ts';
import { createCacheStage } from '../../../gateway/stages/cache.ts';
import type { CacheConfig } from '../../../gateway/cache/config-schema.ts';
import { createLogger } from '../../../gateway/logger.ts';
import { createMetrics } from '../../../gateway/metrics.ts';
import {
  ClientGoneError,
  compose,
  createContext,
  type RequestFacts,
  type Stage,
} from '../../../gateway/pipeline.ts';
import { createProxyStage } from '../../../gateway/stages/proxy.ts';
import { createRouteStage, type RouteDefinition } from '../../../gateway/stages/route.ts';
import { createUpstreams } from '../../../gateway/upstreams.ts';

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
  maxEntryBytes: 64 * 1024,
  heuristicFraction: 0.1,
  maxHeuristicSeconds: 86400,
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
  redis?: HttpCacheDeps['redis'];
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
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const keys = parseAssertionKeys(`test:${randomBytes(32).toString('base64')}`);

/** Sets ctx.principal from `Authorization: Test <customer> [scopes]`, as authenticate would. */
const testAuthenticate: Stage = async (ctx, next) => {
  const match = /^Test (\S+)(?: (\S+))?$/.exec(ctx.req.headers.authorization ?? '');
  if (match !== null) {
    ctx.principal = {
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
  const cache = createHttpCache(
    { ...CACHE_DEFAULTS, ...options.cache },
    {
      redis: options.redis,
      channel: options.channel ?? 'unused',
      log,
      ...(options.clock === undefined ? {} : { now: options.clock.now }),
    },
  );
  const upstreams = createUpstreams([options.upstream], PROXY_CONFIG);
  const route: RouteDefinition = {
    prefix: '/v1',
    upstream: options.upstream,
    auth: 'none',
    cache: true,
    ...options.route,
  };
  const run = compose([
    testAuthenticate,
    createRouteStage([route]),
    createCacheStage(cache),
    createProxyStage(PROXY_CONFIG, {
      upstreams,
      metrics: createMetrics({ processMetrics: false }),
      maxBodyBytes: 1024 * 1024,
      assertionKeys: options.assertionKeys ?? keys,
    }),
  ]);
  const facts: RequestFacts[] = [];
  const server: Server = createServer((req, res) => {
    const controller = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    const ctx = createContext(req, res, log, controller.signal, req.socket.remoteAddress ?? 'unknown');
    ctx.requestId = 'test';
    facts.push(ctx.facts);
    void (async () => {
      try {
        await run(ctx);
        if (ctx.response === undefined) throw new Error('no stage produced a response');
        res.writeHead(ctx.response.status, ctx.response.headers);
        if (ctx.response.body === null) res.end();
        else await pipeline(ctx.response.body, res);
      } catch (error) {
        if (error instanceof ClientGoneError || res.destroyed) return;
        if (res.headersSent) {
          res.destroy();
          return;
        }
        sendProblem(
          res,
          error instanceof HttpProblem ? error : new HttpProblem('ERR_INTERNAL', String(error)),
          ctx.path,
        );
      }
    })();
  });
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
    cache,
    facts,
    get: (path, headers) => send('GET', path, headers),
    send,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await agent.close();
      await upstreams.destroy();
      await cache.close();
    },
  };
}
