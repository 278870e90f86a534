/**
 * The request headers the proxy sends upstream, as stages leave them: the client's, minus
 * what a stage deleted, plus what a stage set. Stages edit this list, never `req.rawHeaders`
 * or `req.headers`, which stay what the client sent (the cache stage answers the client's own
 * conditions from them while it sends the stored response's validators upstream).
 *
 * Edits are recorded, not applied: a request no stage edits costs one object here.
 */
export class UpstreamHeaders {
  readonly #raw: readonly string[];
  /** Lower-case name → the value that replaces every client value, or undefined: removed. */
  #edits: Map<string, string | undefined> | undefined;

  constructor(rawHeaders: readonly string[]) {
    this.#raw = rawHeaders;
  }

  /** Sends `value` instead of whatever the client sent under `name`. */
  set(name: string, value: string): void {
    (this.#edits ??= new Map()).set(name.toLowerCase(), value);
  }

  /** Sends nothing under `name`. */
  delete(name: string): void {
    (this.#edits ??= new Map()).set(name.toLowerCase(), undefined);
  }

  /** Each header to send, names in lower case: the client's in their order, then those set. */
  forEach(visit: (name: string, value: string) => void): void {
    const raw = this.#raw;
    const edits = this.#edits;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = (raw[i] as string).toLowerCase();
      if (edits?.has(name) !== true) visit(name, raw[i + 1] as string);
    }
    if (edits === undefined) return;
    for (const [name, value] of edits) if (value !== undefined) visit(name, value);
  }
}
