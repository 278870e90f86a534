/**
 * What a process has opened, closed in reverse: each component registers its close the moment
 * it is created, so a start that fails half-way (a port in use, a bad certificate) closes
 * exactly what it had opened, and a drain (SIGTERM, or the crash guard) runs the same stack.
 *
 * Reverse order is what makes a drain safe: the listener opened last closes first, so no new
 * request arrives while the stores the requests use (Redis, the audit file, the database pool)
 * are still open for the ones in flight.
 */

type Close = () => Promise<void> | void;

export class Lifecycle {
  readonly #closers: { name: string; close: Close }[] = [];
  #closing: Promise<void> | undefined;

  /** Registers `close` for the component just created; it runs before those created earlier. */
  defer(name: string, close: Close): void {
    if (this.#closing !== undefined) throw new Error(`${name} opened while closing`);
    this.#closers.push({ name, close });
  }

  /** Creates a component and registers its close in one step. */
  async open<T>(
    name: string,
    create: () => Promise<T> | T,
    close: (component: T) => Promise<void> | void,
  ): Promise<T> {
    const component = await create();
    this.defer(name, () => close(component));
    return component;
  }

  /**
   * Runs `start`; when it fails, closes what it had opened and rethrows its error (with any
   * close that failed too, as `cause` would hide the start error: see AggregateError below).
   */
  async start<T>(start: (lifecycle: Lifecycle) => Promise<T>): Promise<T> {
    try {
      return await start(this);
    } catch (error) {
      await this.close().catch((closeError: unknown) => {
        throw new AggregateError([error, closeError], (error as Error).message ?? String(error), {
          cause: error,
        });
      });
      throw error;
    }
  }

  /**
   * Closes every component, last opened first. Each close runs even when an earlier one fails;
   * the failures are thrown together afterwards. Calling it again returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#closeAll();
    return this.#closing;
  }

  async #closeAll(): Promise<void> {
    const failures: Error[] = [];
    for (const { name, close } of this.#closers.reverse()) {
      try {
        await close();
      } catch (error) {
        failures.push(
          new Error(`closing ${name} failed: ${(error as Error).message ?? String(error)}`, { cause: error }),
        );
      }
    }
    if (failures.length > 0) throw new AggregateError(failures, failures.map((f) => f.message).join('; '));
  }
}
