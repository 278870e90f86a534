/**
 * The service's readiness for an orchestrator: a plain-HTTP probe listener (SERVICE_PROBE_PORT)
 * whose `/readyz` runs a real query on the service's own pool, so that a service whose
 * PostgreSQL is down, unreachable or refusing it is NotReady. The service port itself speaks
 * only mutual TLS, which a kubelet cannot: checking that it accepts TCP connections said 200
 * while every request answered 503.
 *
 * `/healthz` here is liveness only (the process answers): restarting the service does not
 * bring a database back. The listener closes first on a drain, so readiness fails as soon as
 * the service stops taking work. It tells nothing but ready or not, with the database's
 * error code: no data, no credential.
 */
import { createServer, type Server } from '../shared/node-http.ts';
import type { Sql } from 'postgres';
import { portUnavailable } from '../shared/port-unavailable.ts';

/** How long the readiness query may take before the service counts as not ready. */
export const READINESS_TIMEOUT_MS = 1000;

export interface ProbeListener {
  url: string;
  close(): Promise<void>;
}

/** Runs `select 1` on the pool within `timeoutMs`: ok, or why not. */
export async function checkDatabase(sql: Sql, timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      sql`select 1`.execute(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { ok: true, detail: 'select 1' };
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    return { ok: false, detail: code ?? message };
  } finally {
    clearTimeout(timer);
  }
}

export async function startProbeListener(options: {
  sql: Sql;
  port: number;
  host: string;
  timeoutMs?: number;
}): Promise<ProbeListener> {
  const timeoutMs = options.timeoutMs ?? READINESS_TIMEOUT_MS;
  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '/').split('?', 1)[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, { status: 'method not allowed' });
    if (path === '/healthz') return send(200, { status: 'ok' });
    if (path !== '/readyz') return send(404, { status: 'not found' });
    void checkDatabase(options.sql, timeoutMs).then((database) =>
      send(database.ok ? 200 : 503, {
        status: database.ok ? 'ready' : 'not ready',
        checks: [{ name: 'postgresql', ...database }],
      }),
    );
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) =>
      reject(portUnavailable(error, 'SERVICE_PROBE_PORT', options.port, options.host)),
    );
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
