/**
 * A real Sentinel setup of the test's own: a master, one replica of it and three sentinels
 * watching them (quorum 2), all `redis-server` on free ports, with a short down-after so a
 * killed master is replaced within a few seconds.
 */
import { createRedisNodes, type RedisNode, type RedisNodesTls } from './redis-nodes.ts';

export interface OwnRedisSentinel {
  master: RedisNode;
  replica: RedisNode;
  sentinels: RedisNode[];
  /** `host:port,...` of the sentinels, as REDIS_SENTINELS takes it. */
  addresses: string;
  name: string;
  /** The master's port as the sentinels tell it now. */
  currentMasterPort(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * `password`: the master and replica require it; `sentinelPassword`: the sentinels require
 * theirs (and use it between themselves); `tls`: data nodes and sentinels speak TLS only.
 */
export async function startRedisSentinel(
  options: { downAfterMs?: number; password?: string; sentinelPassword?: string; tls?: RedisNodesTls } = {},
): Promise<OwnRedisSentinel> {
  const fleet = createRedisNodes('sentinel', options.tls === undefined ? {} : { tls: options.tls });
  const name = 'portico-test';
  const { password, sentinelPassword } = options;
  const data = password === undefined ? {} : { password };
  try {
    const master = await fleet.start([], data);
    const replica = await fleet.start([`replicaof 127.0.0.1 ${master.port}`], data);
    const sentinels = await Promise.all(
      Array.from({ length: 3 }, () =>
        fleet.start(
          [
            `sentinel monitor ${name} 127.0.0.1 ${master.port} 2`,
            `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1000}`,
            `sentinel failover-timeout ${name} 5000`,
            `sentinel parallel-syncs ${name} 1`,
            ...(password === undefined ? [] : [`sentinel auth-pass ${name} ${password}`]),
          ],
          { sentinel: true, ...(sentinelPassword === undefined ? {} : { password: sentinelPassword }) },
        ),
      ),
    );
    const asked = sentinels[0]!.client();
    const currentMasterPort = async () => {
      const [, port] = (await asked.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string];
      return Number(port);
    };
    // Ready when the replica is in sync and every sentinel knows the replica and the others.
    const deadline = Date.now() + 20_000;
    const replicaClient = replica.client();
    const sentinelClients = sentinels.map((sentinel) => sentinel.client());
    for (;;) {
      const link = String(await replicaClient.info('replication'));
      const known = await Promise.all(
        sentinelClients.map(async (client) => {
          const info = (await client.call('SENTINEL', 'MASTER', name)) as string[];
          const field = (key: string) => Number(info[info.indexOf(key) + 1]);
          return field('num-slaves') >= 1 && field('num-other-sentinels') >= 2;
        }),
      );
      if (/master_link_status:up/.test(link) && known.every(Boolean)) break;
      if (Date.now() > deadline) throw new Error('the test sentinels did not see the replica and each other');
      await new Promise((r) => setTimeout(r, 200));
    }
    return {
      master,
      replica,
      sentinels,
      addresses: sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
      name,
      currentMasterPort,
      stop: () => fleet.stopAll(),
    };
  } catch (error) {
    await fleet.stopAll();
    throw error;
  }
}
