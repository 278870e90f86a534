/**
 * Every answer of the soak, counted by kind of request and by status, for the current minute
 * and for the whole run. An answer outside what its request allowed is unexpected: it is
 * counted under a label saying what went wrong, and the first one of each label is kept
 * whole as a sample.
 */

/** What the soak sends; each kind has its own expected statuses (see traffic.ts). */
export const KINDS = [
  'read',
  'list',
  'conditional',
  'create',
  'replay',
  'patch',
  'pay',
  'hammer',
  'bad-token',
] as const;
export type Kind = (typeof KINDS)[number];

/** The first unexpected answer of one label. */
export interface Sample {
  kind: Kind;
  label: string;
  request: string;
  detail: string;
  atSeconds: number;
  count: number;
}

/** Counts of one minute, reset when its table row is printed. */
export interface MinuteCounts {
  requests: number;
  unexpected: number;
  statuses: Map<string, number>;
  startedAt: number;
}

const MAX_SAMPLES = 30;

export class Tally {
  /** kind → status (or `error`) → count, over the whole run. */
  readonly totals = new Map<Kind, Map<string, number>>();
  readonly samples = new Map<string, Sample>();
  unexpected = 0;
  requests = 0;
  minute: MinuteCounts;
  readonly #startedAt: number;
  #closed = false;

  constructor(now = performance.now()) {
    this.#startedAt = now;
    this.minute = Tally.#emptyMinute(now);
  }

  static #emptyMinute(now: number): MinuteCounts {
    return { requests: 0, unexpected: 0, statuses: new Map(), startedAt: now };
  }

  /** One answer (or connection error, as status `error`) that was what its request allowed. */
  expected(kind: Kind, status: string): void {
    if (!this.#closed) this.#count(kind, status);
  }

  /**
   * Counts nothing more. On Ctrl-C the terminal signals the gateway and the service too, and
   * the resets of their shutdown are not answers of the product under load.
   */
  close(): void {
    this.#closed = true;
  }

  /**
   * One answer that was not: counted under its status like any other, and under `label` (as
   * `502`, `200 on If-None-Match`, `stale read`) with a sample of the first one.
   */
  unexpectedAnswer(kind: Kind, status: string, label: string, request: string, detail: string): void {
    if (this.#closed) return;
    this.#count(kind, status);
    this.unexpected++;
    this.minute.unexpected++;
    const key = `${kind} ${label}`;
    const known = this.samples.get(key);
    if (known !== undefined) {
      known.count++;
      return;
    }
    if (this.samples.size >= MAX_SAMPLES) return;
    const atSeconds = Math.round((performance.now() - this.#startedAt) / 1000);
    this.samples.set(key, { kind, label, request, detail: detail.slice(0, 500), atSeconds, count: 1 });
    // Printed as it happens too: in a long run the first sample is the one worth seeing early.
    process.stderr.write(`soak: unexpected at ${atSeconds} s: ${kind} ${request} → ${label}\n`);
  }

  /** Ends the current minute: returns its counts and starts the next. */
  takeMinute(now = performance.now()): MinuteCounts {
    const minute = this.minute;
    this.minute = Tally.#emptyMinute(now);
    return minute;
  }

  /** How many answers of `kind` had `status`, over the whole run. */
  count(kind: Kind, status: string): number {
    return this.totals.get(kind)?.get(status) ?? 0;
  }

  #count(kind: Kind, status: string): void {
    this.requests++;
    this.minute.requests++;
    this.minute.statuses.set(status, (this.minute.statuses.get(status) ?? 0) + 1);
    let byStatus = this.totals.get(kind);
    if (byStatus === undefined) this.totals.set(kind, (byStatus = new Map<string, number>()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }
}
