/**
 * A start that fails half-way (the HTTPS port is taken, after the admin listener, the Redis
 * subscriber, the upstream pools and the audit file were opened) closes everything it opened:
 * the handles, file descriptors and Redis connections are counted before and after.
 */
import { readdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedisClient, waitForRedis } from '../../../shared/redis.ts';
import { startRecordingUpstream, startTestGateway, type RecordingUpstream } from '../support/harness.ts';

let upstream: RecordingUpstream;
let blocker: Server;
let blockedPort: number;
let watcher: Redis;
const dir = mkdtempSync(join(tmpdir(), 'portico-failed-start-'));

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, resolve));
  blockedPort = (blocker.address() as { port: number }).port;
  watcher = createRedisClient({ url: inject('redisUrl'), keyPrefix: inject('redisPrefix') });
});
afterAll(async () => {
  await upstream.close();
  await new Promise((resolve) => blocker.close(resolve));
  watcher.disconnect();
  rmSync(dir, { recursive: true, force: true });
});

/** Handles by kind, as Node reports them (sockets, servers, timers, file handles...). */
function handles(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

const openFds = () => readdirSync('/proc/self/fd').length;

async function redisConnectionsNamed(name: string): Promise<number> {
  const list = String(await watcher.client('LIST'));
  return list.split('\n').filter((line) => line.includes(`name=${name} `)).length;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('a gateway whose HTTPS port is taken', () => {
  it('refuses to start and leaves no listener, socket, timer, file or Redis connection behind', async () => {
    const name = `portico-failed-start-${randomBytes(4).toString('hex')}`;
    const redis = createRedisClient({ url: inject('redisUrl'), keyPrefix: inject('redisPrefix') });
    // The gateway's duplicate of this connection (its cache subscriber) inherits the name.
    redis.options.connectionName = name;
    expect(await waitForRedis(redis, 5000)).toBe(true);
    await redis.client('SETNAME', name);
    await settle();
    const before = { handles: handles(), fds: openFds(), redis: await redisConnectionsNamed(name) };
    expect(before.redis).toBe(1);

    await expect(
      startTestGateway(
        upstream.url,
        { cache: { enabled: true } },
        { port: blockedPort, redis, auditLogPath: join(dir, 'audit.log'), readinessChecks: [] },
      ),
    ).rejects.toThrow(/EADDRINUSE/);

    await settle();
    // The gateway's own Redis subscriber (a duplicate of `redis`, same name) is gone again.
    expect(await redisConnectionsNamed(name)).toBe(before.redis);
    expect(openFds()).toBe(before.fds);
    expect(handles()).toEqual(before.handles);
    redis.disconnect();
  });
});
