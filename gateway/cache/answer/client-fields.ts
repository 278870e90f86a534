/**
 * The stored fields a client gets on every whole answer from one stored response, prepared once
 * per entry instead of once per hit: the fields addressed to this gateway (RFC 9213 targeted
 * cache control, invalidation hints) left out, Transfer-Encoding left out where Content-Length
 * frames the stored body, and that Content-Length as a string.
 *
 * Why: a hit used to copy the stored fields and delete those on the way (the response writer
 * deleted the gateway's own), and a `delete` turns the copy into a slow dictionary that every
 * later stage and the writer then read and iterate. A copy of a prepared object with fast
 * properties is one clone of its shape. Stages still see every field the client will get, and
 * the writer still strips the gateway's fields from every answer (edge/respond.ts).
 */
import type { StoredResponse } from '../store/entry-store.ts';

/** A stored response's fields as a whole answer sends them, and its Content-Length. */
export interface PreparedFields {
  /** Copied per answer, never written. */
  readonly fields: Readonly<Record<string, string | string[]>>;
  /** Undefined for a 204, which has no Content-Length (RFC 9110 section 8.6). */
  readonly contentLength: string | undefined;
}

export class ClientFields {
  /** Entries are replaced, never changed (a 304's update stores a new one): prepared once each. */
  readonly #prepared = new WeakMap<StoredResponse, PreparedFields>();
  readonly #gatewayFields: ReadonlySet<string>;

  /** `gatewayFields`: lower-case names that never leave the gateway (rules/gateway-fields.ts). */
  constructor(gatewayFields: readonly string[]) {
    this.#gatewayFields = new Set(gatewayFields);
  }

  of(entry: StoredResponse): PreparedFields {
    let prepared = this.#prepared.get(entry);
    if (prepared === undefined) {
      prepared = this.#prepare(entry);
      this.#prepared.set(entry, prepared);
    }
    return prepared;
  }

  #prepare(entry: StoredResponse): PreparedFields {
    const framed = entry.status !== 204;
    const fields: Record<string, string | string[]> = {};
    for (const name in entry.headers) {
      if (this.#gatewayFields.has(name) || (framed && name === 'transfer-encoding')) continue;
      fields[name] = entry.headers[name]!;
    }
    return { fields, contentLength: framed ? String(entry.body.length) : undefined };
  }
}
