/**
 * CPU cost of the gateway's edge: the same requests sent straight to an upstream and
 * through the gateway (HTTPS in, pooled HTTP out), with the CPU time of each process read
 * from /proc (Linux). Prints figures side by side; asserts nothing.
 *
 *   node scripts/bench-gateway.ts [requests=20000] [concurrency=32]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createServer, type AddressInfo } from 'node:net';
import { Pool, request } from 'undici';
import { generate } from 'selfsigned';

const total = Number(process.argv[2] ?? 20000);
const concurrency = Number(process.argv[3] ?? 32);
const TICKS_PER_SECOND = 100; // getconf CLK_TCK on Linux

const UPSTREAM = `
const http = require('node:http');
const body = JSON.stringify({ id: 'ord_1', status: 'pending', items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }] });
http.createServer((req, res) => {
  req.resume();
  req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }); res.end(body); });
}).listen(0, '127.0.0.1', function () { console.log(JSON.stringify({ port: this.address().port })); });
`;

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

function firstJsonLine(child: ChildProcess, predicate: (line: Record<string, unknown>) => boolean) {
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (text) => {
      try {
        const line = JSON.parse(text) as Record<string, unknown>;
        if (predicate(line)) resolve(line);
      } catch {
        // not JSON: ignore
      }
    });
    child.once('exit', (code) => reject(new Error(`process exited (${code}) before it was ready`)));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitForHealth(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      const response = await request(`http://127.0.0.1:${port}/healthz`);
      await response.body.text();
      if (response.statusCode === 200) return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('gateway did not become healthy');
}

async function run(pool: Pool, path: string, pid: number) {
  const latencies: number[] = [];
  let next = 0;
  const cpuBefore = cpuSeconds(pid);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const t0 = performance.now();
        const response = await pool.request({ path, method: 'GET' });
        await response.body.arrayBuffer();
        if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const client = process.cpuUsage(clientBefore);
  latencies.sort((a, b) => a - b);
  return {
    rps: Math.round(total / seconds),
    cpuMicrosPerRequest: ((cpuSeconds(pid) - cpuBefore) * 1e6) / total,
    clientMicrosPerRequest: (client.user + client.system) / total,
    p50: latencies[Math.floor(latencies.length * 0.5)] ?? 0,
    p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
  };
}

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-'));
const pem = await generate([{ name: 'commonName', value: 'localhost' }], {
  keyType: 'ec',
  curve: 'P-256',
  algorithm: 'sha256',
  extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }],
});
writeFileSync(join(dir, 'cert.pem'), pem.cert);
writeFileSync(join(dir, 'key.pem'), pem.private);

const upstream = spawn(process.execPath, ['-e', UPSTREAM], { stdio: ['ignore', 'pipe', 'inherit'] });
const upstreamPort = (await firstJsonLine(upstream, (line) => 'port' in line))['port'] as number;
writeFileSync(
  join(dir, 'gateway.json'),
  JSON.stringify({
    listener: { tls: { certFile: 'cert.pem', keyFile: 'key.pem' } },
    routes: [{ prefix: '/v1', upstream: `http://127.0.0.1:${upstreamPort}` }],
  }),
);
const [gatewayPort, adminPort] = [await freePort(), await freePort()];
// LOG_LEVEL from the environment: `LOG_LEVEL=warn` shows what the per-request log line costs.
// GATEWAY_NODE_ARGS (as `--cpu-prof`) go to the gateway process only.
const nodeArgs = (process.env['GATEWAY_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '');
const gateway = spawn(
  process.execPath,
  [...nodeArgs, new URL('../gateway/main.ts', import.meta.url).pathname],
  {
    env: {
      ...process.env,
      GATEWAY_PORT: String(gatewayPort),
      ADMIN_PORT: String(adminPort),
      PORTICO_CONFIG: join(dir, 'gateway.json'),
      PORTICO_DATA_DIR: dir,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);
await waitForHealth(adminPort);

const direct = new Pool(`http://127.0.0.1:${upstreamPort}`, { connections: concurrency });
const proxied = new Pool(`https://localhost:${gatewayPort}`, {
  connections: concurrency,
  connect: { ca: pem.cert, servername: 'localhost' },
});
try {
  // Warm both paths (JIT, pools, TLS sessions) before measuring.
  await run(direct, '/v1/orders/ord_1', upstream.pid!);
  await run(proxied, '/v1/orders/ord_1', gateway.pid!);
  const a = await run(direct, '/v1/orders/ord_1', upstream.pid!);
  const upstreamBefore = cpuSeconds(upstream.pid!);
  const b = await run(proxied, '/v1/orders/ord_1', gateway.pid!);
  const upstreamViaGateway = ((cpuSeconds(upstream.pid!) - upstreamBefore) * 1e6) / total;
  const f = (n: number) => n.toFixed(1).padStart(8);
  console.log(`requests ${total}, concurrency ${concurrency}, node ${process.version}, keep-alive both ways`);
  console.log('                                   direct  via gateway');
  console.log(`requests/s                       ${String(a.rps).padStart(8)} ${String(b.rps).padStart(12)}`);
  console.log(`p50 latency ms                   ${f(a.p50)} ${f(b.p50).padStart(12)}`);
  console.log(`p99 latency ms                   ${f(a.p99)} ${f(b.p99).padStart(12)}`);
  console.log(
    `upstream CPU-µs/request          ${f(a.cpuMicrosPerRequest)} ${f(upstreamViaGateway).padStart(12)}`,
  );
  console.log(`gateway CPU-µs/request                  - ${f(b.cpuMicrosPerRequest).padStart(12)}`);
  console.log(
    `client CPU-µs/request            ${f(a.clientMicrosPerRequest)} ${f(b.clientMicrosPerRequest).padStart(12)}`,
  );
} finally {
  await Promise.all([direct.close(), proxied.close()]);
  gateway.kill('SIGTERM');
  upstream.kill('SIGTERM');
  await new Promise((resolve) => gateway.once('exit', resolve));
}
