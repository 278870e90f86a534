/**
 * A Redis client (one node, or the master Sentinel names) that ends only when it is closed.
 *
 * ioredis 6 ends a client for good when a connect attempt fails because its connector was
 * disconnected meanwhile: every command then fails with "Connection is closed." and nothing
 * reconnects. Sentinel's failover detector does exactly that on the sentinels' +switch-master,
 * so when the message lands while the client is asking a sentinel where the master is (it
 * reconnects every 100 ms to 2 s while the master is down), a gateway stayed unready, and
 * answering 503, until restarted: about one failover in four in test/scale. Here an end the
 * gateway did not ask for (by `quit` or `disconnect`) is followed by a new connect.
 */
import type { Redis, RedisOptions as AnyRedisOptions } from 'ioredis';
import { ioredis } from './ioredis-module.ts';

/** ioredis's options with its default (RESP2, "legacy") reply shapes, which Portico reads. */
type RedisOptions = AnyRedisOptions & { replyMapping?: 'legacy' };

/** A client of ioredis's that reconnects after any end it was not asked for. */
export interface LastingRedis extends Redis {
  /**
   * Drops the socket at once, without the goodbye that a silent link never delivers, and
   * reconnects as after any lost connection.
   */
  reconnectNow(): void;
}

type LastingRedisClass = new (url: string | undefined, options: RedisOptions) => LastingRedis;
let lastingRedisClass: LastingRedisClass | undefined;

/**
 * `url`: a redis:// or rediss:// URL, read by ioredis as it reads its own; none for Sentinel.
 * The class is made at the first call, since its base class is ioredis's (ioredis-module.ts).
 */
export function createLastingRedis(url: string | undefined, options: RedisOptions): LastingRedis {
  lastingRedisClass ??= defineLastingRedis();
  return new lastingRedisClass(url, options);
}

function defineLastingRedis(): LastingRedisClass {
  return class LastingRedisClient extends ioredis().Redis implements LastingRedis {
    /** Set by a close asked for: that end is final. */
    #closing = false;
    #attempt = 0;

    /**
     * The pause before a new connect is the options' `retryStrategy`, ioredis's own between
     * reconnects; a strategy that gives up (no number) is obeyed here too.
     */
    constructor(url: string | undefined, options: RedisOptions) {
      // ioredis skips an undefined first argument; its typings only know the URL form.
      super(url as string, options);
      this.on('ready', () => (this.#attempt = 0));
      this.on('end', () => {
        if (this.#closing) return;
        const delay = this.options.retryStrategy?.(++this.#attempt);
        if (typeof delay !== 'number') return;
        const timer = setTimeout(() => {
          if (!this.#closing && this.status === 'end') this.connect().catch(() => {});
        }, delay);
        // A pending reconnect must not keep a process alive that is otherwise done.
        timer.unref();
      });
    }

    override disconnect(reconnect = false): void {
      if (!reconnect) this.#closing = true;
      super.disconnect(reconnect);
    }

    override quit(...args: Parameters<Redis['quit']>): ReturnType<Redis['quit']> {
      this.#closing = true;
      return super.quit(...args);
    }

    /**
     * Drops the socket at once, without the goodbye that a silent link never delivers, and
     * reconnects as after any lost connection (`disconnect(true)` only half-closes, and the socket
     * of a blackholed link then stays open until the kernel gives up, minutes later).
     */
    reconnectNow(): void {
      this.stream?.destroy();
    }
  };
}
