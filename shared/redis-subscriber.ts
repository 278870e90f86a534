/**
 * The listening side of publish/subscribe (cache invalidations, introspection revocations) in a
 * Redis Cluster.
 *
 * A cluster hands every PUBLISH to every node, so one connection to any node hears the
 * whole channel. ioredis's own cluster subscriber also moves to another node when its node
 * dies, but silently: the messages published in between are lost and nobody is told, so a
 * cache would keep serving what another replica invalidated in that gap. This one says so:
 * `close` when its node is lost, `ready` on the next node, on which the caller subscribes again
 * (and, as live-subscription.ts says, the listener forgets what it kept). Sharded pub/sub
 * (SSUBSCRIBE) would send each message to one shard only, but ioredis hides its failovers in the
 * same way, and the messages are few.
 */
import { EventEmitter } from 'node:events';
import type { Cluster, Redis } from 'ioredis';
import { ioredis } from './ioredis-module.ts';

/** What a publish/subscribe listener needs of its connection (a plain ioredis client has it). */
export interface SubscriberConnection {
  readonly status: string;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  /**
   * Answered on the subscribed connection after every message Redis sent it before: the
   * listener's proof that it is caught up (a silent link answers nothing).
   */
  ping(): Promise<unknown>;
  /**
   * Drops the socket at once and connects anew (then `ready`). Over a silent link a polite
   * close would never complete, and the kernel would take minutes to give up on it.
   */
  reconnectNow(): void;
  on(event: 'ready' | 'close' | 'end', listener: () => void): unknown;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  off(event: 'ready' | 'close' | 'end', listener: () => void): unknown;
  off(event: 'message', listener: (channel: string, message: string) => void): unknown;
  disconnect(): void;
}

/** Pause before trying the next node, so that a cluster that is all down is not hammered. */
const NEXT_NODE_DELAY_MS = 200;

class ClusterSubscriber extends EventEmitter implements SubscriberConnection {
  #current: Redis | undefined;
  #attempt = 0;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;

  readonly #cluster: Cluster;

  constructor(cluster: Cluster) {
    super();
    this.#cluster = cluster;
    this.#connect();
  }

  get status(): string {
    return this.#closed ? 'end' : (this.#current?.status ?? 'reconnecting');
  }

  subscribe(channel: string): Promise<unknown> {
    return this.#current?.subscribe(channel) ?? Promise.reject(new Error('no cluster node connected'));
  }

  unsubscribe(channel: string): Promise<unknown> {
    return this.#current?.unsubscribe(channel) ?? Promise.resolve();
  }

  ping(): Promise<unknown> {
    return this.#current?.ping() ?? Promise.reject(new Error('no cluster node connected'));
  }

  reconnectNow(): void {
    // Its `end` moves this subscriber on to the next node.
    this.#current?.stream?.destroy();
  }

  disconnect(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#current?.disconnect();
    this.#current = undefined;
  }

  #connect(): void {
    // The nodes the cluster client knows now (none before it has read the slots; dead ones
    // drop out as it re-reads them).
    const candidates = this.#cluster.nodes('all');
    const node = candidates[this.#attempt++ % Math.max(candidates.length, 1)]?.options;
    if (node === undefined) {
      this.#timer = setTimeout(() => this.#connect(), NEXT_NODE_DELAY_MS);
      return;
    }
    // No reconnecting to the same node: the next one is tried instead (it may be up).
    const connection = new (ioredis().Redis)({
      host: node.host ?? '127.0.0.1',
      port: node.port ?? 6379,
      // The cluster's own credentials (REDIS_USERNAME, REDIS_PASSWORD), as every node requires.
      ...(node.username === undefined ? {} : { username: node.username }),
      ...(node.password === undefined ? {} : { password: node.password }),
      // And the cluster's TLS (REDIS_TLS and its files): invalidations cross hosts here too.
      ...(node.tls === undefined ? {} : { tls: node.tls }),
      retryStrategy: () => null,
      connectTimeout: 2000,
      lazyConnect: false,
    });
    this.#current = connection;
    connection.on('error', () => {}); // reported by the command connection; this one only listens
    connection.on('ready', () => this.emit('ready'));
    connection.on('close', () => this.emit('close'));
    connection.on('message', (channel: string, message: string) => this.emit('message', channel, message));
    connection.once('end', () => {
      if (this.#current !== connection) return;
      if (this.#closed) this.emit('end');
      else this.#timer = setTimeout(() => this.#connect(), NEXT_NODE_DELAY_MS);
    });
  }
}

export function createClusterSubscriber(cluster: Cluster): SubscriberConnection {
  return new ClusterSubscriber(cluster);
}
