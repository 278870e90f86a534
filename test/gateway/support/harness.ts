/**
 * Real sockets for gateway tests: a recording upstream, an in-process gateway on port 0
 * over real HTTPS, and a raw TLS client for requests no well-behaved client would send.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { Agent } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import { parseConfig } from '../../../gateway/config/load.ts';
import { createLogger } from '../../../gateway/observability/logger.ts';
import type { BuildOptions } from '../../../gateway/build.ts';
import { startGateway, type Gateway, type GatewayDeps } from '../../../gateway/start.ts';
import { createTestCertificate, type TestCertificate } from '../../support/tls.ts';

/** What the upstream saw of one request. */
export interface UpstreamRecord {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  bytes: number;
  /** The whole body arrived (the request was not cut short). */
  completed: boolean;
  remotePort: number;
}

export interface RecordingUpstream {
  url: string;
  port: number;
  records: UpstreamRecord[];
  /** Distinct client ports seen: one per upstream connection the gateway opened. */
  connections: Set<number>;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, record: UpstreamRecord) => void;

/** By default answers every request with 200 JSON once its body has arrived. */
export async function startRecordingUpstream(handler?: Handler): Promise<RecordingUpstream> {
  const records: UpstreamRecord[] = [];
  const connections = new Set<number>();
  const server: Server = createServer((req, res) => {
    const record: UpstreamRecord = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      bytes: 0,
      completed: false,
      remotePort: req.socket.remotePort ?? 0,
    };
    records.push(record);
    connections.add(record.remotePort);
    req.on('data', (chunk: Buffer) => (record.bytes += chunk.length));
    req.on('end', () => (record.completed = true));
    if (handler !== undefined) {
      handler(req, res, record);
      return;
    }
    req.on('end', () => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ ok: true, bytes: record.bytes }));
    });
    req.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    records,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface TestGateway {
  gateway: Gateway;
  port: number;
  origin: string;
  adminOrigin: string;
  certificate: TestCertificate;
  /** undici dispatcher that trusts the test certificate. */
  agent: Agent;
  /** Parsed JSON log lines written so far. */
  logs: Record<string, unknown>[];
  logText: () => string;
  close(): Promise<void>;
}

let sharedCertificate: Promise<TestCertificate> | undefined;

/** Starts a gateway whose `/v1` route goes to `upstreamUrl`; `config` is merged on top. */
export async function startTestGateway(
  upstreamUrl: string,
  config: Record<string, unknown> = {},
  deps: Partial<GatewayDeps> = {},
  ownCertificate?: TestCertificate,
  /** Stand-in stages by name, and the like (gateway/build.ts). */
  buildOptions: BuildOptions = {},
): Promise<TestGateway> {
  sharedCertificate ??= createTestCertificate();
  const certificate = ownCertificate ?? (await sharedCertificate);
  const { listener = {}, ...rest } = config as { listener?: Record<string, unknown> };
  const { config: parsed } = parseConfig({
    // The edge is tested here; identity has its own tests, so these routes need no caller.
    routes: [{ prefix: '/v1', upstream: upstreamUrl, auth: 'none' }],
    ...rest,
    listener: {
      ...listener,
      tls: { ...(listener['tls'] as object), certFile: certificate.certFile, keyFile: certificate.keyFile },
    },
  });
  let text = '';
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      text += chunk.toString();
      for (const line of chunk.toString().split('\n'))
        if (line !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const gateway = await startGateway(
    parsed,
    {
      log: createLogger({ level: 'debug', destination }),
      port: 0,
      adminPort: 0,
      ...deps,
    },
    buildOptions,
  );
  const port = gateway.addresses.https.port;
  const agent = new Agent({ connect: { ca: certificate.cert, servername: 'localhost' } });
  return {
    gateway,
    port,
    origin: `https://localhost:${port}`,
    adminOrigin: `http://127.0.0.1:${gateway.addresses.admin.port}`,
    certificate,
    agent,
    logs,
    logText: () => text,
    async close() {
      await gateway.close();
      await agent.close();
    },
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  raw: string;
}

/**
 * Sends bytes exactly as given over TLS and reads until the server closes or a complete
 * response (by Content-Length) has arrived. `send` may write in steps.
 */
export function rawRequest(
  port: number,
  ca: string,
  send: string | ((socket: TLSSocket) => Promise<void> | void),
  timeoutMs = 5000,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
    let data = '';
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parseResponse(data);
      if (parsed === undefined) reject(new Error(`no HTTP response; received ${JSON.stringify(data)}`));
      else resolve(parsed);
    };
    const timer = setTimeout(finish, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString('latin1');
      const parsed = parseResponse(data);
      if (
        parsed !== undefined &&
        Buffer.byteLength(parsed.body, 'latin1') >= Number(parsed.headers['content-length'] ?? Infinity)
      )
        finish();
    });
    socket.on('close', finish);
    // The server may close while we still write (413): the response is what matters.
    socket.on('error', () => {});
    socket.once('secureConnect', () => {
      if (typeof send === 'string') socket.write(send);
      else void Promise.resolve(send(socket)).catch(() => {});
    });
  });
}

function parseResponse(data: string): RawResponse | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = data.slice(0, end).split('\r\n');
  const status = Number(statusLine.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status, headers, body: data.slice(end + 4), raw: data };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export type AuditLine = Record<string, unknown>;

/** The record the gateway wrote to `auditLogPath` for `requestId`, waiting (bounded) for its batch. */
export async function auditRecordOf(auditLogPath: string, requestId: string): Promise<AuditLine> {
  for (let i = 0; i < 100; i++) {
    const found = readFileSync(auditLogPath, 'utf8')
      .split('\n')
      .filter((line) => line.endsWith('}'))
      .map((line) => JSON.parse(line) as AuditLine)
      .find((record) => record['requestId'] === requestId);
    if (found !== undefined) return found;
    await sleep(20);
  }
  throw new Error(`no audit record for request ${requestId}`);
}

/**
 * A recording upstream and a gateway in front of it, started before the file's tests and
 * closed after them: the pair most gateway test files begin with. Read `running.gw` and
 * `running.upstream` inside tests and hooks (they are set once `beforeAll` has run).
 * `deps` goes to startTestGateway (an `auditLogPath`, say), `handler` to the upstream.
 */
export function useRecordingGateway(
  deps: Partial<GatewayDeps> = {},
  handler?: Handler,
): {
  readonly upstream: RecordingUpstream;
  readonly gw: TestGateway;
} {
  const running = {} as { upstream: RecordingUpstream; gw: TestGateway };
  beforeAll(async () => {
    running.upstream = await startRecordingUpstream(handler);
    running.gw = await startTestGateway(running.upstream.url, {}, deps);
  });
  afterAll(async () => {
    await running.gw?.close();
    await running.upstream?.close();
  });
  return running;
}
