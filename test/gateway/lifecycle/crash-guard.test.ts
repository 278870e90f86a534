/**
 * A programming error that escapes every handler in a real gateway process: the process logs
 * it, stops accepting, lets the request in flight finish, and exits with status 1 instead of
 * dying mid-request.
 */
import { connect } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { request } from 'undici';
import { Agent } from 'undici';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../support/harness.ts';

const PRELOAD = new URL('../support/plant-error.ts', import.meta.url).pathname;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('drains what is in flight, then exits 1 with the error logged', async () => {
  // The upstream holds each answer for a while: the request is in flight when the error comes.
  const upstream: RecordingUpstream = await startRecordingUpstream((req, res) => {
    req.resume();
    setTimeout(() => res.end('{"slow":true}'), 800);
  });
  cleanups.push(() => upstream.close());
  const gateway: GatewayProcess = await startGatewayProcess(
    { routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none' }] },
    {},
    ['--import', PRELOAD],
  );
  cleanups.push(() => gateway.stop());
  const agent = new Agent({ connect: { rejectUnauthorized: false } });
  cleanups.push(() => agent.close());

  const inFlight = request(`https://127.0.0.1:${gateway.port}/v1/slow`, { dispatcher: agent });
  await new Promise((resolve) => setTimeout(resolve, 200));
  gateway.child.kill('SIGUSR2');

  const answer = await inFlight;
  expect(answer.statusCode).toBe(200);
  expect(await answer.body.text()).toBe('{"slow":true}');
  expect(await gateway.exited).toBe(1);
  const fatal = gateway.logs.find((line) => line['level'] === 60);
  expect(fatal?.['msg']).toMatch(/programming error escaped/);
  expect(JSON.stringify(fatal?.['err'])).toContain('planted programming error');
  // Nothing listens any more.
  const refused = await new Promise<string>((resolve) => {
    const socket = connect(gateway.port, '127.0.0.1');
    socket.once('connect', () => resolve('connected'));
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
  expect(refused).toBe('ECONNREFUSED');
});
