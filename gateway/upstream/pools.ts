/**
 * One undici Pool per upstream target (origin), shared by every route that names it, so that
 * connections stay alive across requests and clients. An https: origin connects with the TLS
 * settings `proxy.upstreamTls` gives it (upstream-tls.ts). Health checks get a pool of their
 * own per origin, so that a check never waits behind the traffic it judges.
 */
import { connect } from 'node:net';
import { Pool } from '../../shared/undici-parts.ts';
import type { ProxyConfig } from '../config/schema/upstream.ts';
import { createTlsConnector } from './upstream-tls.ts';

/** One upstream origin as the balancer and the circuit breaker see it. */
export interface Target {
  readonly origin: string;
  readonly pool: Pool;
  /**
   * Requests sent to it whose response head has not come back yet, whichever route sent them:
   * the load the balancer weighs and the circuit breaker caps.
   */
  outstanding: number;
  /** Whether its answers echo the exchange id (`proxy.echoingOrigins`, answer-binding.ts). */
  readonly echoes: boolean;
}

/** The upstream pools of one gateway instance. */
export interface Upstreams {
  /** The target for an origin named by a route; throws for one no route named. */
  target(origin: string): Target;
  /** The pool for an origin named by a route; throws for one no route named. */
  pool(origin: string): Pool;
  /** A one-connection pool for health checks of the origin, made on first use. */
  checkPool(origin: string): Pool;
  readonly origins: readonly string[];
  /** Whether a TCP connection to the origin opens within `timeoutMs`. */
  probe(origin: string, timeoutMs: number): Promise<{ ok: boolean; detail: string }>;
  /** Waits for in-flight upstream requests, then closes; `destroy` cuts them. */
  close(): Promise<void>;
  destroy(): Promise<void>;
}

function tlsConnector(origin: string, config: ProxyConfig) {
  const index = config.upstreamTls.findIndex((entry) => new URL(entry.origin).origin === origin);
  return createTlsConnector(config.upstreamTls[index], {
    path: `proxy.upstreamTls[${index}]`,
    connectTimeoutMs: config.connectTimeoutMs,
  });
}

export function createUpstreams(origins: Iterable<string>, config: ProxyConfig): Upstreams {
  const targets = new Map<string, Target>();
  const connectors = new Map<string, ReturnType<typeof tlsConnector>>();
  const newPool = (origin: string, connections: number) => {
    let connector = connectors.get(origin);
    if (connector === undefined && origin.startsWith('https:')) {
      connector = tlsConnector(origin, config);
      connectors.set(origin, connector);
    }
    return new Pool(origin, {
      connections,
      pipelining: 1,
      allowH2: false,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      headersTimeout: config.responseTimeoutMs,
      bodyTimeout: config.bodyTimeoutMs,
      connectTimeout: config.connectTimeoutMs,
      ...(connector === undefined ? {} : { connect: connector }),
    });
  };
  const echoing = new Set(config.echoingOrigins.map((entry) => new URL(entry).origin));
  for (const upstream of origins) {
    const origin = new URL(upstream).origin;
    if (!targets.has(origin))
      targets.set(origin, {
        origin,
        pool: newPool(origin, config.connectionsPerUpstream),
        outstanding: 0,
        echoes: echoing.has(origin),
      });
  }
  const checkPools = new Map<string, Pool>();
  const byUpstream = new Map<string, Target>();
  const target = (upstream: string) => {
    // Routes name a handful of upstreams: each is parsed once, not on every request.
    let found = byUpstream.get(upstream);
    if (found === undefined) {
      found = targets.get(new URL(upstream).origin);
      if (found === undefined) throw new Error(`no pool for upstream ${upstream}`);
      byUpstream.set(upstream, found);
    }
    return found;
  };
  const allPools = () => [...[...targets.values()].map((entry) => entry.pool), ...checkPools.values()];
  return {
    origins: [...targets.keys()],
    target,
    pool: (upstream) => target(upstream).pool,
    checkPool(upstream) {
      const { origin } = target(upstream);
      let pool = checkPools.get(origin);
      if (pool === undefined) {
        pool = newPool(origin, 1);
        checkPools.set(origin, pool);
      }
      return pool;
    },
    probe(upstream, timeoutMs) {
      const url = new URL(upstream);
      const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
      return new Promise((resolve) => {
        const socket = connect({ host: url.hostname, port, timeout: timeoutMs });
        const done = (ok: boolean, detail: string) => {
          socket.destroy();
          resolve({ ok, detail });
        };
        socket.once('connect', () => done(true, 'reachable'));
        socket.once('timeout', () => done(false, `no connection within ${timeoutMs} ms`));
        socket.once('error', (error: NodeJS.ErrnoException) =>
          done(false, error.code ?? 'connection failed'),
        );
      });
    },
    async close() {
      await Promise.all(allPools().map((pool) => pool.close()));
    },
    async destroy() {
      await Promise.all(allPools().map((pool) => pool.destroy()));
    },
  };
}

/**
 * Lets upstream requests still running finish within `graceMs` (background revalidations; the
 * client-facing ones ended with the listener's drain), then cuts what remains.
 */
export async function closePools(upstreams: Upstreams, graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    upstreams.close().then(() => true),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs))),
  ]);
  clearTimeout(timer);
  if (!closed) await upstreams.destroy();
}
