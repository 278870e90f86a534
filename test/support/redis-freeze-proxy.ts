/**
 * A TCP proxy in front of Redis that can go silent: `freeze` stops forwarding in both directions
 * without closing anything, as a blackholed link does (no FIN, no RST, no error: bytes just stop
 * arriving). Connections opened while frozen are accepted and then hear nothing. `thaw` lets
 * what was held go through, as TCP's retransmissions do once a partition heals.
 */
import { createServer, Socket, type AddressInfo, type Server } from 'node:net';

export interface FreezeProxy {
  port: number;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
}

export async function startRedisFreezeProxy(target: { host: string; port: number }): Promise<FreezeProxy> {
  let frozen = false;
  const pairs = new Set<Pair>();

  const connectUpstream = (pair: Pair) => {
    const upstream = new Socket();
    pair.upstream = upstream;
    upstream.on('error', () => pair.client.destroy());
    upstream.on('close', () => {
      pairs.delete(pair);
      pair.client.destroy();
    });
    upstream.connect(target.port, target.host);
    pipe(pair);
  };
  // Nothing read is written on while frozen: reading stops, the kernel buffers fill, and
  // each side's writes wait, as over a dead link.
  const pipe = (pair: Pair) => {
    if (pair.upstream === undefined) return;
    pair.client.pipe(pair.upstream, { end: false });
    pair.upstream.pipe(pair.client, { end: false });
  };
  const stop = (pair: Pair) => {
    if (pair.upstream === undefined) return;
    pair.client.unpipe(pair.upstream);
    pair.upstream.unpipe(pair.client);
    pair.client.pause();
    pair.upstream.pause();
  };

  const server: Server = createServer((client) => {
    const pair: Pair = { client, upstream: undefined };
    pairs.add(pair);
    client.on('error', () => {});
    // A close on one side reaches the other only while the link carries it.
    client.on('end', () => {
      if (!frozen) pair.upstream?.end();
    });
    client.on('close', () => {
      if (!frozen) {
        pairs.delete(pair);
        pair.upstream?.destroy();
      }
    });
    if (frozen) client.pause();
    else connectUpstream(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    port: (server.address() as AddressInfo).port,
    freeze() {
      frozen = true;
      for (const pair of pairs) stop(pair);
    },
    thaw() {
      frozen = false;
      for (const pair of [...pairs]) {
        if (pair.client.destroyed) {
          // The client gave up during the partition: its goodbye now reaches Redis.
          pairs.delete(pair);
          pair.upstream?.destroy();
        } else if (pair.upstream === undefined) connectUpstream(pair);
        else pipe(pair);
        pair.client.resume();
        pair.upstream?.resume();
      }
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
