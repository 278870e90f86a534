/**
 * GATEWAY_WORKERS=2 always stops (issue 31, item 2). After SIGTERM the primary and its workers
 * exit within the drain deadline plus a small margin, whatever stdout does (its reader gone)
 * and whatever a worker does (stopped, never exiting): the primary kills what remains at its
 * deadline. A primary SIGKILLed leaves no worker behind: one still starting ends, one serving
 * drains what it serves first.
 * Every process is found by a mark in its environment, so cleanup reaches orphans too.
 */
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, type GatewayProcess } from '../gateway/support/gateway-process.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../gateway/support/harness.ts';
import { portFree } from '../support/free-port.ts';
import { until } from './support/gateway-workers.ts';
import { killMarked, markedPids, PROCESS_MARK_VARIABLE, untilNoneLeft } from './support/marked-processes.ts';

const DRAIN_MS = 1000;
/**
 * What the exit may take beyond the drain deadline: the primary's own margin (4 s, past the
 * workers' 2 s and their SIGKILL a second later) and 2 s of slack for a busy machine.
 */
const MARGIN_MS = 6000;
/** How long the upstream takes over `/v1/slow`: a request still in flight when the primary dies. */
const SLOW_ANSWER_MS = 1500;
const SLOW_START = new URL('./support/slow-worker-start.ts', import.meta.url).pathname;

let upstream: RecordingUpstream;
let running: { gateway?: GatewayProcess; mark: string } | undefined;
beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    setTimeout(
      () => {
        res.setHeader('content-type', 'application/json');
        res.end('{"ok":true}');
      },
      req.url?.includes('/slow') === true ? SLOW_ANSWER_MS : 0,
    );
  });
});
afterEach(async () => {
  if (running === undefined) return;
  killMarked(running.mark);
  await running.gateway?.stop();
  running = undefined;
});
afterAll(async () => {
  await upstream?.close();
});

async function startWorkers(
  extraEnv: Record<string, string> = {},
  nodeArgs: string[] = [],
  drainMs = DRAIN_MS,
) {
  const mark = randomUUID();
  running = { mark };
  const gateway = await startGatewayProcess(
    {
      routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none' }],
      rateLimits: { policies: [] },
      listener: { shutdownTimeoutMs: drainMs },
    },
    { GATEWAY_WORKERS: '2', [PROCESS_MARK_VARIABLE]: mark, ...extraEnv },
    nodeArgs,
  );
  running.gateway = gateway;
  return { gateway, mark };
}

/** Requests that each write a log line (into a stdout whose reader is gone); outcomes aside. */
async function logTraffic(port: number, count: number): Promise<void> {
  const agent = new Agent({ connect: { rejectUnauthorized: false } });
  try {
    for (let i = 0; i < count; i++) {
      try {
        const response = await request(`https://127.0.0.1:${port}/v1/log-me`, {
          dispatcher: agent,
          headersTimeout: 2000,
          bodyTimeout: 2000,
        });
        await response.body.dump();
      } catch {
        // What matters is the stop below.
      }
    }
  } finally {
    await agent.destroy();
  }
}

describe.each([
  ['its stdout reader gone', false],
  ['its stdout reader gone and a worker stopped (SIGSTOP)', true],
])('GATEWAY_WORKERS=2, %s', (_case, stopAWorker) => {
  it('exits after SIGTERM within the drain deadline plus a margin, every process gone, ports free', async () => {
    const { gateway, mark } = await startWorkers();
    await gateway.waitForLog('gateway workers listening', 40_000);
    const workers = markedPids(mark).filter((pid) => pid !== gateway.child.pid);
    expect(workers).toHaveLength(2);

    gateway.child.stdout!.destroy();
    await logTraffic(gateway.port, 20);
    if (stopAWorker) process.kill(workers[0]!, 'SIGSTOP');

    const exitCode = new Promise<number | null>((resolve) => gateway.child.once('exit', resolve));
    gateway.child.kill('SIGTERM');
    const took = await untilNoneLeft(mark, DRAIN_MS + MARGIN_MS);
    expect({ took, left: markedPids(mark) }, gateway.stderr().slice(0, 400)).toMatchObject({
      took: expect.any(Number),
      left: [],
    });
    // A worker killed at the deadline is a stop that did not end cleanly.
    expect(await exitCode).toBe(stopAWorker ? 1 : 0);
    expect(await portFree(gateway.port)).toBe(true);
    expect(await portFree(gateway.adminPort)).toBe(true);
  }, 90_000);
});

describe('GATEWAY_WORKERS=2, the primary SIGKILLed while a worker starts', () => {
  it('leaves no worker behind: each ends within its deadline, ports free', async () => {
    const { gateway, mark } = await startWorkers(
      { PORTICO_TEST_SLOW_SLOT: '2', PORTICO_TEST_SLOW_MS: '30000' },
      ['--import', SLOW_START],
    );
    // The first worker listens; the primary forks the second, which now starts (slowly).
    await until(() => markedPids(mark).length === 3, 10_000);
    expect(gateway.logs.some((line) => line['msg'] === 'gateway workers listening')).toBe(false);

    gateway.child.kill('SIGKILL');
    const took = await untilNoneLeft(mark, DRAIN_MS + MARGIN_MS);
    expect({ took, left: markedPids(mark) }, gateway.stderr().slice(0, 400)).toMatchObject({
      took: expect.any(Number),
      left: [],
    });
    expect(await portFree(gateway.port)).toBe(true);
    expect(await portFree(gateway.adminPort)).toBe(true);
  }, 90_000);
});

describe('GATEWAY_WORKERS=2 serving, the primary SIGKILLed', () => {
  it('each worker drains what it serves, then exits within its deadline, ports free', async () => {
    // Long enough a drain for the slow answer on a busy machine; the workers exit once drained.
    const drainMs = 10_000;
    const { gateway, mark } = await startWorkers({}, [], drainMs);
    await gateway.waitForLog('gateway workers listening', 40_000);
    const agent = new Agent({ connect: { rejectUnauthorized: false } });
    const seen = upstream.records.length;
    const answer = request(`https://127.0.0.1:${gateway.port}/v1/slow`, {
      dispatcher: agent,
      headersTimeout: 20_000,
      bodyTimeout: 20_000,
    }).then(
      async (response) => ({ status: response.statusCode, body: await response.body.text() }),
      (error: Error) => ({ error: error.message }),
    );
    await until(() => upstream.records.length > seen, 10_000);

    gateway.child.kill('SIGKILL');
    expect(await answer).toEqual({ status: 200, body: '{"ok":true}' });
    await agent.destroy();
    const took = await untilNoneLeft(mark, drainMs + MARGIN_MS);
    expect({ took, left: markedPids(mark) }).toMatchObject({ took: expect.any(Number), left: [] });
    // Both drained their gateway: the one serving and the idle one.
    expect(gateway.logs.filter((line) => line['msg'] === 'gateway stopped')).toHaveLength(2);
    expect(await portFree(gateway.port)).toBe(true);
    expect(await portFree(gateway.adminPort)).toBe(true);
  }, 90_000);
});
