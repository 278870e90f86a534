/**
 * Tells the stages that the client went away before its answer was out.
 *
 * Not an AbortController: an AbortSignal with a listener on it cost ~20 CPU-µs per proxied
 * request here (its listener bookkeeping, and per-request objects surviving a scavenge). Not an
 * EventEmitter either: its constructor, and the wrapper `once` makes per listener, are more
 * than a request needs, which is at most a listener or two, for one event, told at most once.
 */
export class ClientSignal {
  /** True once the client closed before its response finished. */
  gone = false;
  #listeners: (() => void)[] | undefined = undefined;

  /** Calls `listener` when the client goes (never, once it is gone already). */
  once(_event: 'abort', listener: () => void): void {
    (this.#listeners ??= []).push(listener);
  }

  /** Forgets `listener`. */
  off(_event: 'abort', listener: () => void): void {
    const listeners = this.#listeners;
    if (listeners === undefined) return;
    const index = listeners.indexOf(listener);
    if (index !== -1) listeners.splice(index, 1);
  }

  /** Marks the client gone and calls every listener, once. */
  abort(): void {
    if (this.gone) return;
    this.gone = true;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener();
  }
}
