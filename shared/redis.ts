/**
 * One way to connect to Redis for every part of Portico that uses it (rate limits,
 * revocations, cache invalidation), whichever way it is deployed: one node (`REDIS_URL`),
 * Redis Cluster (`REDIS_CLUSTER_NODES`) or a Sentinel-watched master (`REDIS_SENTINELS` with
 * `REDIS_SENTINEL_NAME`). All three fail fast instead of queueing, and all three speak TLS when
 * told to (redis-tls.ts: `rediss://`, or REDIS_TLS=true and the REDIS_TLS_* files).
 *
 * With ioredis defaults a down Redis makes commands wait in the offline queue, so a request
 * would hang; with the offline queue off and a short command timeout, a down or frozen Redis
 * is an error within `commandTimeoutMs`, which each caller answers by its own policy.
 */
import type { Cluster, Redis } from 'ioredis';
import { ioredis } from './ioredis-module.ts';
import { createLastingRedis, type LastingRedis } from './lasting-redis.ts';
import type { RedisTls } from './redis-tls.ts';
import type { HostPort, RedisCredentials, RedisTarget } from './redis-target.ts';
import { createClusterSubscriber, type SubscriberConnection } from './redis-subscriber.ts';

export type { SubscriberConnection } from './redis-subscriber.ts';
export type { RedisTls } from './redis-tls.ts';
export { explainRedisError } from './redis-tls.ts';
export type { HostPort, RedisCredentials, RedisTarget } from './redis-target.ts';
export { parseHostPorts, redisKeyPrefixFromEnv, redisTargetFromEnv } from './redis-target.ts';

/** A connection to Redis as the gateway uses it: a node (alone or behind Sentinel) or a cluster. */
export type RedisClient = Redis | Cluster;

export interface RedisOptions {
  url: string;
  /** Prepended to every key, so that deployments and test runs never share keys. */
  keyPrefix?: string;
  commandTimeoutMs?: number;
}

export type ConnectionOptions = Omit<RedisOptions, 'url'>;

/** Keep trying to come back, at most every 2 s: the gateway returns to Redis by itself. */
const retryStrategy = (attempt: number) => Math.min(attempt * 100, 2000);

/** What every connection shares, whatever the deployment. */
function nodeOptions(options: ConnectionOptions) {
  return {
    keyPrefix: options.keyPrefix ?? 'portico:',
    enableOfflineQueue: false,
    commandTimeout: options.commandTimeoutMs ?? 50,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
    // Commands issued in one event-loop turn (by every request in flight) go out in one socket
    // write. Timeouts and fail-fast apply per command. The rate-limit counter, the call nearly
    // every request makes, batches its calls per turn itself and goes around this pipeline
    // (gateway/rate-limit/redis-counter.ts says why).
    enableAutoPipelining: true,
  } as const;
}

/** A single node at `options.url` (TLS for `rediss://`, with `tls`'s CA, certificate and name). */
export function createRedisClient(options: RedisOptions & { tls?: RedisTls }): LastingRedis {
  return createLastingRedis(options.url, {
    ...nodeOptions(options),
    retryStrategy,
    ...(options.tls === undefined ? {} : { tls: options.tls }),
  });
}

/** A client for `target`; its commands fail fast (see the file comment) in every mode. */
export function createRedisConnection(target: RedisTarget, options: ConnectionOptions = {}): RedisClient {
  switch (target.mode) {
    case 'single':
      return createRedisClient({ ...options, url: target.url, ...(target.tls ? { tls: target.tls } : {}) });
    case 'sentinel':
      return createLastingRedis(undefined, {
        ...nodeOptions(options),
        ...target.credentials,
        sentinels: target.sentinels,
        name: target.name,
        ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
        retryStrategy,
        sentinelRetryStrategy: retryStrategy,
        sentinelCommandTimeout: 500,
        // TLS both to the sentinels and to the master and replicas they name.
        ...(target.tls === undefined
          ? {}
          : { tls: target.tls, sentinelTLS: target.tls, enableTLSForSentinelMode: true }),
        // Subscribes to the sentinels' +switch-master: the client moves to a promoted replica
        // when the sentinels decide, not at its next failed reconnect.
        failoverDetector: true,
      });
    case 'cluster':
      return createCluster(
        target.nodes,
        { ...target.credentials, ...(target.tls ? { tls: target.tls } : {}) },
        options,
      );
  }
}

/** `perNodeAccess`: the credentials and TLS of every data node (the nodes the cluster names included). */
function createCluster(
  nodes: HostPort[],
  perNodeAccess: RedisCredentials & { tls?: RedisTls },
  options: ConnectionOptions,
): Cluster {
  const { keyPrefix, enableOfflineQueue, enableAutoPipelining, ...perNode } = nodeOptions(options);
  return new (ioredis().Cluster)(nodes, {
    keyPrefix,
    enableOfflineQueue,
    enableAutoPipelining,
    redisOptions: { ...perNode, ...perNodeAccess },
    clusterRetryStrategy: retryStrategy,
    // A command sent to a master that just died is retried once the slots are re-read; the
    // caller's own deadline (the store timeout) bounds how long that may take.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    // Promotions show up within a second even when no command hit the dead master.
    slotsRefreshInterval: 1000,
    // Dead masters' connections are not retried forever: the refreshed slot map replaces them.
    clusterNodeRetryStrategy: retryStrategy,
  });
}

/** True for a Redis Cluster client: its scripts may touch keys of one slot only. */
export function isCluster(client: RedisClient): client is Cluster {
  return client.isCluster;
}

/** How the gateway names the deployment in logs (no credentials: URLs are not echoed). */
export function describeTarget(target: RedisTarget): string {
  const over = target.tls === undefined ? '' : ' over TLS';
  switch (target.mode) {
    case 'single':
      return `one Redis node${over}`;
    case 'cluster':
      return `Redis Cluster (seeds ${target.nodes.map((n) => `${n.host}:${n.port}`).join(', ')})${over}`;
    case 'sentinel':
      return `Redis Sentinel master "${target.name}" (sentinels ${target.sentinels.map((n) => `${n.host}:${n.port}`).join(', ')})${over}`;
  }
}

/**
 * A connection that only listens, for publish/subscribe: a second one of the same node (or
 * of whatever master Sentinel names), or, in a cluster, one node at a time (a cluster hands
 * every PUBLISH to every node) whose loss is reported, not hidden (see redis-subscriber.ts).
 */
export function createSubscriber(client: RedisClient): SubscriberConnection {
  if (isCluster(client)) return createClusterSubscriber(client);
  // No command deadline of its own: the invalidation bus judges the link by its liveness pings,
  // and a 50 ms one would drop their answers on a loaded host.
  const subscriber = createLastingRedis(undefined, {
    ...client.options,
    replyMapping: 'legacy',
    commandTimeout: undefined,
    // Its users subscribe again at every 'ready' (live-subscription.ts). ioredis's own
    // resubscription sends SUBSCRIBE without handling its failure: a Redis that drops the
    // connection again before answering left an unhandled rejection (seen in CI, a frozen Redis).
    autoResubscribe: false,
  });
  // Its outages are the command connection's too, which reports them.
  subscriber.on('error', () => {});
  return subscriber;
}

/**
 * Redis answers: a node PONGs, or every master of the cluster does (a master that died and
 * is not replaced yet leaves its slots, and the limits kept there, unreachable).
 */
export async function pingRedis(client: RedisClient): Promise<void> {
  if (!isCluster(client)) {
    await client.ping();
    return;
  }
  if (client.status !== 'ready') throw new Error(`cluster ${client.status}`);
  const masters = client.nodes('master');
  if (masters.length === 0) throw new Error('no cluster master known');
  await Promise.all(masters.map((node) => node.ping()));
}

/** Resolves when the client is ready, or after `timeoutMs` (the caller then runs degraded). */
export async function waitForRedis(client: RedisClient, timeoutMs = 2000): Promise<boolean> {
  if (client.status === 'ready') return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    client.once('ready', onReady);
  });
}
