/**
 * CPU cost of the cache-hit path: the same GET sent straight to an upstream, through the
 * gateway's pipeline with the cache off (proxied every time), and through it with the cache
 * on (every request after the first a hit). Plain HTTP on both sides, so the figures are the
 * stages' own cost (TLS is measured by bench-gateway.ts); CPU of each process read from /proc
 * (Linux). Prints figures side by side; asserts nothing.
 *
 *   node scripts/bench-cache.ts [requests=20000] [concurrency=32]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Pool } from 'undici';
import { createCacheStage } from '../gateway/cache/cache-stage.ts';
import { createHttpCache } from '../gateway/cache/http-cache.ts';
import { createLogger } from '../gateway/logger.ts';
import { createMetrics } from '../gateway/metrics.ts';
import { compose, type GatewayContext } from '../gateway/pipeline.ts';
import { createProxyStage } from '../gateway/stages/proxy.ts';
import { createRouteStage } from '../gateway/stages/route.ts';
import { createUpstreams } from '../gateway/upstreams.ts';
import { HttpProblem, sendProblem } from '../shared/errors.ts';

const TICKS_PER_SECOND = 100; // getconf CLK_TCK on Linux

const UPSTREAM = `
const http = require('node:http');
const body = JSON.stringify({ id: 'ord_1', customer_id: 'cus_1', status: 'pending', items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }], currency: 'EUR', total: 2500 });
http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body),
      'cache-control': 'public, max-age=3600', etag: '"o1.1"', date: new Date().toUTCString() });
    res.end(body);
  });
}).listen(0, '127.0.0.1', function () { console.log(JSON.stringify({ port: this.address().port })); });
`;

/** The gateway child: route → cache → proxy, written back as gateway/server.ts does. */
function serve(upstream: string, cacheOn: boolean): void {
  const log = createLogger({
    level: 'warn',
    destination: new Writable({ write: (_c, _e, callback) => callback() }),
  });
  const proxyConfig = {
    trustProxy: false,
    connectionsPerUpstream: 128,
    connectTimeoutMs: 5000,
    responseTimeoutMs: 30000,
    bodyTimeoutMs: 30000,
    keepAliveTimeoutMs: 4000,
    retries: 1,
  };
  const cache = createHttpCache(
    {
      enabled: true,
      maxBytes: 64 * 1024 * 1024,
      maxEntryBytes: 1024 * 1024,
      heuristicFraction: 0.1,
      maxHeuristicSeconds: 86400,
    },
    { channel: 'bench', log },
  );
  const run = compose([
    createRouteStage([{ prefix: '/v1', upstream, auth: 'none', cache: cacheOn }]),
    createCacheStage(cache),
    createProxyStage(proxyConfig, {
      upstreams: createUpstreams([upstream], proxyConfig),
      metrics: createMetrics({ processMetrics: false }),
      maxBodyBytes: 1024 * 1024,
    }),
  ]);
  const server = createServer((req, res) => {
    const target = req.url ?? '/';
    const ctx: GatewayContext = {
      req,
      res,
      target,
      path: target.split('?', 1)[0] ?? '/',
      requestId: 'bench',
      facts: {},
      log,
      signal: new AbortController().signal,
    };
    void (async () => {
      try {
        await run(ctx);
        const response = ctx.response!;
        res.writeHead(response.status, response.headers);
        if (response.body === null) res.end();
        else await pipeline(response.body, res);
      } catch (error) {
        if (res.headersSent) res.destroy();
        else
          sendProblem(res, error instanceof HttpProblem ? error : new HttpProblem('ERR_INTERNAL', 'failed'));
      }
    })();
  });
  server.keepAliveTimeout = 5000;
  // A clean exit on SIGTERM lets `node --cpu-prof` write its profile.
  process.once('SIGTERM', () => process.exit(0));
  server.listen(0, '127.0.0.1', () => {
    console.log(JSON.stringify({ port: (server.address() as AddressInfo).port }));
  });
}

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

function port(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (text) => {
      try {
        resolve((JSON.parse(text) as { port: number }).port);
      } catch {
        // not JSON
      }
    });
    child.once('exit', (code) => reject(new Error(`process exited (${code}) before it was ready`)));
  });
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  cpu: Map<number, number>;
}

async function load(pool: Pool, total: number, concurrency: number, pids: number[]): Promise<Figures> {
  const latencies: number[] = [];
  let next = 0;
  const before = new Map(pids.map((pid) => [pid, cpuSeconds(pid)]));
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const t0 = performance.now();
        const response = await pool.request({ path: '/v1/orders/ord_1', method: 'GET' });
        await response.body.arrayBuffer();
        if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    rps: Math.round(total / seconds),
    p50: latencies[Math.floor(latencies.length * 0.5)] ?? 0,
    p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    cpu: new Map(pids.map((pid) => [pid, ((cpuSeconds(pid) - (before.get(pid) ?? 0)) * 1e6) / total])),
  };
}

async function main(): Promise<void> {
  const total = Number(process.argv[2] ?? 20000);
  const concurrency = Number(process.argv[3] ?? 32);
  const script = new URL(import.meta.url).pathname;
  const children: ChildProcess[] = [];
  const start = (args: string[]) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    return child;
  };
  try {
    const upstream = start(['-e', UPSTREAM]);
    const upstreamUrl = `http://127.0.0.1:${await port(upstream)}`;
    const proxyOnly = start([script, '--serve', upstreamUrl, 'off']);
    const cached = start([script, '--serve', upstreamUrl, 'on']);
    const pools = {
      direct: new Pool(upstreamUrl, { connections: concurrency }),
      proxy: new Pool(`http://127.0.0.1:${await port(proxyOnly)}`, { connections: concurrency }),
      hit: new Pool(`http://127.0.0.1:${await port(cached)}`, { connections: concurrency }),
    };
    const up = upstream.pid!;
    const runs = async () => ({
      direct: await load(pools.direct, total, concurrency, [up]),
      proxy: await load(pools.proxy, total, concurrency, [up, proxyOnly.pid!]),
      hit: await load(pools.hit, total, concurrency, [up, cached.pid!]),
    });
    await runs(); // warm-up: JIT, pools, the one miss that fills the cache
    const r = await runs();
    const f = (n: number) => n.toFixed(1).padStart(12);
    console.log(
      `requests ${total}, concurrency ${concurrency}, node ${process.version}, plain HTTP, keep-alive`,
    );
    console.log('                              direct   gateway:proxy  gateway:cache-hit');
    console.log(
      `requests/s              ${String(r.direct.rps).padStart(12)} ${String(r.proxy.rps).padStart(15)} ${String(r.hit.rps).padStart(18)}`,
    );
    console.log(
      `p50 latency ms          ${f(r.direct.p50)} ${f(r.proxy.p50).padStart(15)} ${f(r.hit.p50).padStart(18)}`,
    );
    console.log(
      `p99 latency ms          ${f(r.direct.p99)} ${f(r.proxy.p99).padStart(15)} ${f(r.hit.p99).padStart(18)}`,
    );
    console.log(
      `gateway CPU-µs/request  ${'-'.padStart(12)} ${f(r.proxy.cpu.get(proxyOnly.pid!) ?? 0).padStart(15)} ${f(r.hit.cpu.get(cached.pid!) ?? 0).padStart(18)}`,
    );
    console.log(
      `upstream CPU-µs/request ${f(r.direct.cpu.get(up) ?? 0)} ${f(r.proxy.cpu.get(up) ?? 0).padStart(15)} ${f(r.hit.cpu.get(up) ?? 0).padStart(18)}`,
    );
    await Promise.all(Object.values(pools).map((pool) => pool.close()));
  } finally {
    for (const child of children) child.kill('SIGTERM');
  }
}

if (process.argv[2] === '--serve') serve(process.argv[3] ?? '', process.argv[4] === 'on');
else await main();
