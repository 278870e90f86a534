/**
 * Shutdown always ends, whatever the log's reader does (issue 31, item 2): `npm run gateway |
 * tee log` with the reader gone, or a log shipper that stops reading. Both processes, as
 * production runs them, with stdout a real pipe that the test closes or stops reading; after
 * SIGTERM each must exit within its drain deadline plus a small margin, its ports free.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../support/databases.ts';
import { spawnService, type ServiceChild } from '../../resource-service/service-process.ts';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.ts';
import { sleep, startRecordingUpstream, type RecordingUpstream } from '../support/harness.ts';

const DRAIN_MS = 1000;
/** What the exit may take beyond the drain deadline: the process's own close, on a busy machine. */
const MARGIN_MS = 4000;

let upstream: RecordingUpstream;
let database: ScratchDatabase;
const gateways: GatewayProcess[] = [];
const services: ServiceChild[] = [];
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  database = await createScratchDatabase();
});
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(services.map((s) => s.kill('SIGKILL')));
  await upstream?.close();
  await database?.drop();
});

/** Whether a listener could bind the port now (the process that held it is gone). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** `count` requests that each write a log line, a few at a time; failures are not the point. */
async function logTraffic(url: string, count: number, dispatcher?: Agent): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next++ < count) {
      try {
        const response = await request(url, {
          ...(dispatcher === undefined ? {} : { dispatcher }),
          headersTimeout: 2000,
          bodyTimeout: 2000,
        });
        await response.body.dump();
      } catch {
        // A process that freezes on its log is what the SIGTERM below must still end.
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

/** Whether the process answers `url` within 2 s: a log with no reader must not stop it serving. */
async function serves(url: string): Promise<boolean> {
  try {
    const response = await request(url, { headersTimeout: 2000, bodyTimeout: 2000 });
    await response.body.dump();
    return response.statusCode === 200;
  } catch {
    return false;
  }
}

/** SIGTERM, and the time until the process exited (or the bound, when it did not), and how. */
async function stopWithin(child: ChildProcess) {
  const bound = DRAIN_MS + MARGIN_MS;
  const start = Date.now();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const ended = await Promise.race([exited.then(() => true), sleep(bound).then(() => false)]);
  return { ended, ms: Date.now() - start, bound, code: child.exitCode, signal: child.signalCode };
}

/**
 * `closed`: the reader closed stdout a while ago (writes have met EPIPE since); `closing`: it
 * closes as SIGTERM comes, with lines still batched, so that the exit's flush meets EPIPE first
 * (`npm run gateway | tee log` and Ctrl-C); `stopped`: it stopped reading (the pipe fills).
 */
type Reader = 'closed' | 'closing' | 'stopped';
const readers: Reader[] = ['closed', 'closing', 'stopped'];

/** Does to stdout what `reader` says, with traffic that writes log lines around it. */
async function troubleStdout(
  reader: Reader,
  stdout: NodeJS.ReadableStream & { destroy(): void },
  traffic: (count: number) => Promise<void>,
) {
  if (reader === 'closing') {
    await traffic(20);
    stdout.destroy();
    return;
  }
  if (reader === 'closed') stdout.destroy();
  else stdout.pause();
  // Enough request lines to fill a pipe (about 64 KiB), and the periodic flush's turn.
  await traffic(reader === 'closed' ? 20 : 600);
  await sleep(400);
}

/**
 * The audit log in its file, or on stdout too (`PORTICO_AUDIT_LOG=-`), where its last records
 * may wait on the same reader: its stop may then take until the exit deadline (status 1).
 */
const audits = [
  ['file', {}],
  ['stdout', { PORTICO_AUDIT_LOG: '-' }],
] as const;
const gatewayCases = readers.flatMap((reader) => audits.map(([audit, env]) => [reader, audit, env] as const));

describe.each(gatewayCases)('gateway, %s pipe, audit log to %s', (reader, audit, env) => {
  it('exits after SIGTERM within the drain deadline, its ports free', async () => {
    const gateway = await startGatewayProcess(
      {
        routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none' }],
        rateLimits: { policies: [] },
        listener: { shutdownTimeoutMs: DRAIN_MS },
      },
      env,
    );
    gateways.push(gateway);
    const agent = new Agent({ connect: { rejectUnauthorized: false } });
    await troubleStdout(reader, gateway.child.stdout!, (count) =>
      logTraffic(`https://127.0.0.1:${gateway.port}/v1/log-me`, count, agent),
    );
    await agent.destroy();
    if (reader !== 'closing') {
      expect(gateway.child.exitCode, `stderr: ${gateway.stderr().slice(0, 400)}`).toBeNull();
      expect(await serves(`http://127.0.0.1:${gateway.adminPort}/healthz`)).toBe(true);
    }

    const stop = await stopWithin(gateway.child);
    expect(stop, `stderr: ${gateway.stderr().slice(0, 400)}`).toMatchObject({ ended: true });
    if (audit === 'file') expect(stop.code).toBe(0);
    else expect([0, 1]).toContain(stop.code);
    expect(stop.ms).toBeLessThan(stop.bound);
    expect(await portFree(gateway.port)).toBe(true);
    expect(await portFree(gateway.adminPort)).toBe(true);
  }, 60_000);
});

describe.each(readers)('resource service, %s pipe', (reader) => {
  it('exits after SIGTERM within the drain deadline, its port free', async () => {
    const service = await spawnService({
      databaseUrl: database.url,
      env: { LOG_LEVEL: 'info', SERVICE_SHUTDOWN_TIMEOUT_MS: String(DRAIN_MS) },
    });
    services.push(service);
    // Requests without an assertion: each is refused with a log line saying why.
    await troubleStdout(reader, service.child.stdout!, (count) =>
      logTraffic(`${service.url}/v1/orders`, count),
    );
    if (reader !== 'closing') {
      expect(service.child.exitCode, service.output().slice(-400)).toBeNull();
      expect(await serves(`${service.url}/healthz`)).toBe(true);
    }

    const stop = await stopWithin(service.child);
    expect(stop, service.output().slice(-400)).toMatchObject({ ended: true, code: 0 });
    expect(stop.ms).toBeLessThan(stop.bound);
    expect(await portFree(service.port)).toBe(true);
  }, 60_000);
});
