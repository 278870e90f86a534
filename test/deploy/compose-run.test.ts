/**
 * deploy/compose.yaml run as compose runs it, on this machine's PostgreSQL and Redis
 * (support/compose-process.ts): the one-shot jobs first (internal CA, issuer), then the service
 * and two gateways with their own data volumes. Each gateway's own healthcheck command must
 * pass, and a token made by the documented command must work on both replicas.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../support/free-port.ts';
import { createScratchDatabase, type ScratchDatabase } from '../support/databases.ts';
import { composeFile } from './support/deploy-files.ts';
import { ComposeWorld, type ComposeRun } from './support/compose-process.ts';
import type { Doc } from './support/kustomize.ts';

const services = composeFile()['services'] as Record<string, Doc>;
const root = mkdtempSync(join(tmpdir(), 'portico-compose-'));
const running: ComposeRun[] = [];
const gatewayPorts = new Map<string, { https: number; admin: number }>();
let database: ScratchDatabase;
let world: ComposeWorld;

async function job(name: string): Promise<void> {
  const run = world.run(services[name]!, {});
  running.push(run);
  const code = await run.exited;
  if (code !== 0) throw new Error(`${name} exited ${code}: ${run.output()}`);
}

/** The healthcheck's own command, on the admin port this gateway was given. */
async function healthy(name: string): Promise<boolean> {
  const [kind, ...argv] = services[name]!['healthcheck'].test as string[];
  expect(kind).toBe('CMD');
  // The command asks the admin listener's default port, which the gateway keeps (no ADMIN_PORT).
  expect(services[name]!['environment']['ADMIN_PORT']).toBeUndefined();
  const run = world.run(
    { command: argv.map((a) => a.replace(':8442/', `:${gatewayPorts.get(name)!.admin}/`)) },
    {},
  );
  return (await run.exited) === 0;
}

async function listening(port: number, run: ComposeRun): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline || run.child.exitCode !== null)
      throw new Error(`not listening (exit ${run.child.exitCode}, ${run.child.signalCode}): ${run.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

beforeAll(async () => {
  database = await createScratchDatabase();
  const servicePort = await freePort();
  world = new ComposeWorld(root, new Map([['service:8081', `localhost:${servicePort}`]]));
  await job('internal-ca');
  await job('issuer');
  const service = world.run(services['service']!, {
    DATABASE_URL: database.url,
    SERVICE_PORT: String(servicePort),
  });
  running.push(service);
  // depends_on: service_started; the gateways' first requests need it listening.
  await listening(servicePort, service);
  for (const name of ['gateway-1', 'gateway-2']) {
    const ports = { https: await freePort(), admin: await freePort() };
    gatewayPorts.set(name, ports);
    const redis = { REDIS_URL: inject('redisUrl'), PORTICO_REDIS_PREFIX: `${inject('redisPrefix')}compose:` };
    running.push(
      world.run(services[name]!, {
        ...redis,
        GATEWAY_PORT: String(ports.https),
        ADMIN_PORT: String(ports.admin),
      }),
    );
  }
}, 120_000);

afterAll(async () => {
  for (const run of running) if (run.child.exitCode === null) run.child.kill('SIGTERM');
  await Promise.all(running.map((run) => run.exited));
  await database?.drop();
  rmSync(root, { recursive: true, force: true });
});

describe('deploy/compose.yaml, run', () => {
  it('each gateway passes its own healthcheck, and one token works on both', async () => {
    for (const name of gatewayPorts.keys()) {
      const deadline = Date.now() + 60_000;
      while (!(await healthy(name))) {
        if (Date.now() > deadline)
          throw new Error(`${name} never healthy: ${running.map((r) => r.output()).join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    // The documented command: `docker compose run --rm issuer 'node scripts/token.ts --customer demo'`.
    const mint = world.run(
      { ...services['issuer'], command: ['node scripts/token.ts --customer compose-demo'] },
      {},
    );
    expect(await mint.exited).toBe(0);
    const token = mint.output().trim();
    // Each gateway serves the self-signed certificate of its own data volume (curl -k in the trial).
    const agent = new Agent({ connect: { rejectUnauthorized: false } });
    for (const [name, ports] of gatewayPorts) {
      const answer = await request(`https://127.0.0.1:${ports.https}/v1/orders`, {
        headers: { authorization: `Bearer ${token}` },
        dispatcher: agent,
      });
      expect(answer.statusCode, `${name}: ${await answer.body.text()}`).toBe(200);
    }
    await agent.close();
  }, 120_000);
});
