/**
 * A real Redis Cluster of the test's own: six `redis-server` nodes in cluster mode on free
 * ports (three masters, three replicas, made by `redis-cli --cluster create`), with a short
 * node timeout so that a killed master's replica takes over within a few seconds.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createRedisNodes, type RedisNode, type RedisNodesTls } from './redis-nodes.ts';

const run = promisify(execFile);

export interface OwnRedisCluster {
  nodes: RedisNode[];
  /** `host:port,...` of every node, as REDIS_CLUSTER_NODES takes it. */
  seeds: string;
  /** The node serving `key` now (the key as stored: with its prefix). */
  masterOf(key: string): Promise<RedisNode>;
  /** Resolves once every live node says cluster_state:ok and agrees `key`'s master is not `dead`. */
  waitForOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * `nodeTimeoutMs`: how long a silent master takes to be declared failed (default 1000 ms);
 * `password`: every node requires it (requirepass, masterauth); `tls`: every node, and the
 * cluster bus between them, speaks TLS only.
 */
export async function startRedisCluster(
  options: { nodeTimeoutMs?: number; password?: string; tls?: RedisNodesTls } = {},
): Promise<OwnRedisCluster> {
  const { password, tls } = options;
  const fleet = createRedisNodes('cluster', tls === undefined ? {} : { tls });
  try {
    const nodes = await Promise.all(
      Array.from({ length: 6 }, () =>
        fleet.start(
          (port) => [
            'cluster-enabled yes',
            `cluster-config-file nodes-${port}.conf`,
            `cluster-node-timeout ${options.nodeTimeoutMs ?? 1000}`,
            // A replica may take over however long it was cut off (a test kills masters at will).
            'cluster-replica-validity-factor 0',
            // Replicas sync at once, not after Redis's default 5 s wait for more of them.
            'repl-diskless-sync-delay 0',
            ...(tls === undefined ? [] : ['tls-cluster yes']),
          ],
          password === undefined ? {} : { password },
        ),
      ),
    );
    const addresses = nodes.map((node) => `127.0.0.1:${node.port}`);
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...addresses,
        '--cluster-replicas',
        '1',
        '--cluster-yes',
        ...(password === undefined ? [] : ['-a', password, '--no-auth-warning']),
        ...(tls === undefined
          ? []
          : ['--tls', '--cacert', tls.caFile, '--cert', tls.client.certFile, '--key', tls.client.keyFile]),
      ],
      {
        timeout: 30_000,
      },
    );
    const alive = () => nodes.filter((node) => node.alive());
    const clients = new Map(nodes.map((node) => [node, node.client()]));
    const ask = (node: RedisNode) => clients.get(node)!;

    const masterOf = async (key: string): Promise<RedisNode> => {
      const any = ask(alive()[0]!);
      const slot = (await any.call('CLUSTER', 'KEYSLOT', key)) as number;
      const ranges = (await any.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      const range = ranges.find(([from, to]) => slot >= from && slot <= to);
      const node = nodes.find((n) => n.port === range?.[2][1]);
      if (node === undefined) throw new Error(`no master for slot ${slot}`);
      return node;
    };
    const waitForOk = async (timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const states = await Promise.all(
          alive().map((node) =>
            ask(node)
              .call('CLUSTER', 'INFO')
              .then((info) => /cluster_state:ok/.test(String(info)))
              .catch(() => false),
          ),
        );
        if (states.every(Boolean)) return;
        if (Date.now() > deadline) throw new Error('the test cluster did not reach cluster_state:ok');
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await waitForOk();
    await waitForReplicasInSync(nodes);
    return { nodes, seeds: addresses.join(','), masterOf, waitForOk, stop: () => fleet.stopAll() };
  } catch (error) {
    await fleet.stopAll();
    throw error;
  }
}

/**
 * Every replica has finished its initial sync: until then a killed master takes with it what
 * was written to it (Redis replicates asynchronously), which a test would misread as a bug.
 */
async function waitForReplicasInSync(nodes: RedisNode[], timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const infos = await Promise.all(nodes.map((node) => node.client().info('replication')));
    const replicas = infos.filter((info) => /role:slave/.test(info));
    if (replicas.length === 3 && replicas.every((info) => /master_link_status:up/.test(info))) return;
    if (Date.now() > deadline) throw new Error('the test cluster replicas did not finish their initial sync');
    await new Promise((r) => setTimeout(r, 100));
  }
}
