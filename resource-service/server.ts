/**
 * The resource service on a port: an HTTP server with bounds that keep one slow or greedy
 * client from holding it, and the drain both processes share (shared/http-drain.ts), which
 * answers what the server has received before it closes.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHttpDrain } from '../shared/http-drain.ts';
import { createServiceApp } from './app.ts';
import type { ServiceOptions } from './app.ts';

export interface RunningService {
  server: Server;
  url: string;
  /**
   * Drains: stops accepting connections, answers the requests already received (with
   * `Connection: close`), closes idle keep-alive connections, and after `deadlineMs` (default
   * 10 s) cuts the connections still open. Resolves true when every request finished in time.
   */
  close(options?: { deadlineMs?: number }): Promise<boolean>;
}

export const DEFAULT_DRAIN_DEADLINE_MS = 10_000;

/** Starts the service on `port` (0 for any) and `host`. */
export async function startService(
  options: ServiceOptions & { port: number; host?: string },
): Promise<RunningService> {
  const app = createServiceApp(options);
  const handler = app.handler as unknown as (req: IncomingMessage, res: ServerResponse) => void;
  const server = createServer(
    {
      // Bounds that keep one slow or greedy client from holding the service.
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 65_000,
      maxHeaderSize: 16 * 1024,
    },
    (req, res) => {
      drain.track(res);
      handler(req, res);
    },
  );
  const drain = createHttpDrain(server, options.logger);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  let closing: Promise<boolean> | undefined;
  return {
    server,
    url: `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`,
    close: ({ deadlineMs = DEFAULT_DRAIN_DEADLINE_MS } = {}) => (closing ??= drain.drain(deadlineMs)),
  };
}
