/**
 * Tells the stages, and undici, that the client went away before its answer was out.
 *
 * An EventEmitter that emits `abort`, not an AbortController: undici takes either as a request's
 * `signal`, and an AbortSignal with a listener on it cost ~20 CPU-µs per proxied request here
 * (its listener bookkeeping, and per-request objects surviving a scavenge). Its flag is named
 * `gone`, not `aborted`: undici hands anything with an `aborted` member to Node's
 * AbortSignal-only listener helper.
 */
import { EventEmitter } from 'node:events';

export class ClientSignal extends EventEmitter {
  /** True once the client closed before its response finished. */
  gone = false;

  /** Marks the client gone and tells every listener, once. */
  abort(): void {
    if (this.gone) return;
    this.gone = true;
    this.emit('abort');
  }
}
