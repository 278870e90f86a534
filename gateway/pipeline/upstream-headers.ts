/**
 * The request headers the proxy sends upstream, as stages leave them: the client's, minus
 * what a stage deleted, plus what a stage set. Stages edit this list, never `req.rawHeaders`
 * or `req.headers`, which stay what the client sent (the cache stage answers the client's own
 * conditions from them while it sends the stored response's validators upstream).
 *
 * Edits are recorded, not applied: a request no stage edits costs one object here.
 */
import type { IncomingHttpHeaders } from 'node:http';

export class UpstreamHeaders {
  readonly #raw: readonly string[];
  /** The client's fields by lower-case name, for `get`. */
  readonly #client: Readonly<IncomingHttpHeaders>;
  /** By lower-case name, the value that replaces every client value, or undefined: removed. */
  #edits: Map<string, string | undefined> | undefined;

  constructor(rawHeaders: readonly string[], headers: Readonly<IncomingHttpHeaders>) {
    this.#raw = rawHeaders;
    this.#client = headers;
    this.#edits = undefined;
  }

  /** Sends `value` instead of whatever the client sent under `name`. */
  set(name: string, value: string): void {
    (this.#edits ??= new Map()).set(name.toLowerCase(), value);
  }

  /** Sends nothing under `name`. */
  delete(name: string): void {
    (this.#edits ??= new Map()).set(name.toLowerCase(), undefined);
  }

  /**
   * What goes upstream under `name` so far: a stage's value, or the client's (several
   * joined with commas, as RFC 9110 section 5.3 allows), or undefined when there is none.
   */
  get(name: string): string | undefined {
    const lower = name.toLowerCase();
    const edits = this.#edits;
    if (edits?.has(lower) === true) return edits.get(lower);
    const value = this.#client[lower];
    return Array.isArray(value) ? value.join(', ') : value;
  }

  /**
   * Each header to send, names in lower case: the client's in their order, then those set.
   * `hopByHop` (the names the client's `Connection` lists) drops the client's own fields of
   * those names, never one a stage set: a client cannot strip what the gateway states.
   */
  forEach(visit: (name: string, value: string) => void, hopByHop?: ReadonlySet<string>): void {
    const raw = this.#raw;
    const edits = this.#edits;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = (raw[i] as string).toLowerCase();
      if (edits?.has(name) !== true && hopByHop?.has(name) !== true) visit(name, raw[i + 1] as string);
    }
    if (edits === undefined) return;
    for (const [name, value] of edits) if (value !== undefined) visit(name, value);
  }

  /** A list with the same edits, which edits of its own leave this one as it is. */
  copy(): UpstreamHeaders {
    const copy = new UpstreamHeaders(this.#raw, this.#client);
    if (this.#edits !== undefined) copy.#edits = new Map(this.#edits);
    return copy;
  }
}
