/**
 * One undici Pool per upstream origin, shared by every route that names it, so that
 * connections stay alive across requests and clients. An https: origin connects with the TLS
 * settings `proxy.upstreamTls` gives it (upstream-tls.ts).
 */
import { connect } from 'node:net';
import { Pool } from 'undici';
import type { ProxyConfig } from './config-schema.ts';
import { createTlsConnector } from './upstream-tls.ts';

/** The upstream pools of one gateway instance. */
export interface Upstreams {
  /** The pool for an origin named by a route; throws for one no route named. */
  pool(origin: string): Pool;
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
  const pools = new Map<string, Pool>();
  for (const upstream of origins) {
    const origin = new URL(upstream).origin;
    if (pools.has(origin)) continue;
    pools.set(
      origin,
      new Pool(origin, {
        connections: config.connectionsPerUpstream,
        pipelining: 1,
        keepAliveTimeout: config.keepAliveTimeoutMs,
        headersTimeout: config.responseTimeoutMs,
        bodyTimeout: config.bodyTimeoutMs,
        connectTimeout: config.connectTimeoutMs,
        ...(origin.startsWith('https:') ? { connect: tlsConnector(origin, config) } : {}),
      }),
    );
  }
  const byUpstream = new Map<string, Pool>();
  return {
    origins: [...pools.keys()],
    pool(upstream) {
      // Routes name a handful of upstreams: each is parsed once, not on every request.
      let pool = byUpstream.get(upstream);
      if (pool === undefined) {
        pool = pools.get(new URL(upstream).origin);
        if (pool === undefined) throw new Error(`no pool for upstream ${upstream}`);
        byUpstream.set(upstream, pool);
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
      await Promise.all([...pools.values()].map((pool) => pool.close()));
    },
    async destroy() {
      await Promise.all([...pools.values()].map((pool) => pool.destroy()));
    },
  };
}
