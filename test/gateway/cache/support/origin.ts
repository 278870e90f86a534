/**
 * A scripted origin on a real socket: each test says how to answer and reads what arrived.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IDENTITY_HEADER } from '../../../../shared/identity-assertion.ts';

export interface OriginRequest {
  method: string;
  /** Path and query. */
  url: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** From the gateway's identity assertion (read, not verified: this is a test origin). */
  customer?: string;
  scopes?: string[];
}

export interface OriginReply {
  status?: number;
  /** Undefined values are left out. */
  headers?: Record<string, string | string[] | undefined>;
  body?: string;
  /** false: no Date field (Node's server adds one by default). */
  sendDate?: false;
}

export type OriginHandler = (request: OriginRequest) => OriginReply | Promise<OriginReply>;

export interface TestOrigin {
  url: string;
  requests: OriginRequest[];
  /** Requests seen for a path (any query). */
  count(path?: string): number;
  setHandler(handler: OriginHandler): void;
  close(): Promise<void>;
}

export async function startOrigin(initial: OriginHandler): Promise<TestOrigin> {
  let handler = initial;
  const requests: OriginRequest[] = [];
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    const request: OriginRequest = {
      method: req.method ?? 'GET',
      url,
      path: url.split('?', 1)[0] ?? '/',
      headers: req.headers,
      ...claims(req.headers[IDENTITY_HEADER]),
    };
    requests.push(request);
    req.resume();
    req.on('end', () => {
      void Promise.resolve(handler(request)).then(
        (reply) => {
          const headers = Object.entries(reply.headers ?? {}).filter(
            (entry): entry is [string, string | string[]] => entry[1] !== undefined,
          );
          if (reply.sendDate === false) res.sendDate = false;
          res.writeHead(reply.status ?? 200, Object.fromEntries(headers));
          res.end(request.method === 'HEAD' ? undefined : (reply.body ?? ''));
        },
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    count: (path) => requests.filter((r) => path === undefined || r.path === path).length,
    setHandler(next) {
      handler = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function claims(header: string | string[] | undefined): { customer?: string; scopes?: string[] } {
  if (typeof header !== 'string') return {};
  const part = header.split('.')[2];
  if (part === undefined) return {};
  const parsed = JSON.parse(Buffer.from(part, 'base64url').toString()) as { cid: string; scp: string[] };
  return { customer: parsed.cid, scopes: parsed.scp };
}
