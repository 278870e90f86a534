/**
 * Load through gateway processes while a Redis master is killed: what every request was
 * answered, when the store refusals (onStoreFailure: deny, 503) began and ended, and how long
 * each gateway took to report ready again.
 */
import type { GatewayProcess } from '../../gateway/support/gateway-process.ts';
import { freshCustomer, LIMIT, policy, type ScaleFixture } from './scale-fixture.ts';

export type Kind = 'valid' | 'bad-token' | 'revoked-key';

export interface Answer {
  kind: Kind;
  status: number;
  /** When it was sent, in ms after the kill (negative: before). */
  at: number;
}

export interface FailoverOutcome {
  answers: Answer[];
  /** Requests that got no HTTP answer at all: the first few, as strings, and how many in all. */
  errors: string[];
  errorCount: number;
  /** Ms from the kill to the sending of the last request of a valid credential refused 503 (0: none). */
  windowMs: number;
  /** Ms from the kill until each gateway's /readyz was 200 again. */
  readyMs: number[];
}

export interface Credentials {
  /** `Bearer ...` of customers sharing the load (they may reach their limit: 429 is an answer). */
  valid: string[];
  /** A token whose signature does not verify. */
  badToken: string;
  /** `ApiKey ...` revoked before the load. */
  revokedKey: string;
}

/** A failover test's own timeout: up to 30 s for the gateways to be ready again, on a busy machine. */
export const FAILOVER_TEST_TIMEOUT_MS = 60_000;
const CONCURRENCY = 6;
const WARM_UP_MS = 500;
const AFTER_READY_MS = 1000;
/** Errors kept for the report; the rest are counted only (a gone gateway fails every call). */
const ERRORS_KEPT = 5;
/** After a failed call: a refused connection fails at once, and must not become a hot loop. */
const AFTER_ERROR_MS = 50;

export async function loadThroughFailover(
  fixture: ScaleFixture,
  gateways: GatewayProcess[],
  credentials: Credentials,
  kill: () => Promise<void>,
): Promise<FailoverOutcome> {
  const answers: Answer[] = [];
  const errors: string[] = [];
  let errorCount = 0;
  let killedAt = Number.POSITIVE_INFINITY;
  let running = true;
  let sent = 0;
  const pick = (n: number): [Kind, string] => {
    if (n % 5 === 0) return ['bad-token', credentials.badToken];
    if (n % 7 === 0) return ['revoked-key', credentials.revokedKey];
    return ['valid', credentials.valid[n % credentials.valid.length]!];
  };
  const loop = async () => {
    while (running) {
      const n = sent++;
      const [kind, authorization] = pick(n);
      const gateway = gateways[n % gateways.length]!;
      const sentAt = Date.now();
      try {
        const { status } = await fixture.call(gateway.port, authorization);
        answers.push({ kind, status, at: sentAt - killedAt });
      } catch (error) {
        if (errorCount++ < ERRORS_KEPT)
          errors.push(
            `${kind} sent ${sentAt - killedAt} ms after the kill (${new Date(sentAt).toISOString()}), failed after ${Date.now() - sentAt} ms: ${describe(error)}`,
          );
        await new Promise((r) => setTimeout(r, AFTER_ERROR_MS));
      }
    }
  };
  const load = Promise.all(Array.from({ length: CONCURRENCY }, loop));
  await new Promise((r) => setTimeout(r, WARM_UP_MS));
  killedAt = Date.now();
  await kill();
  let readyMs: number[];
  try {
    readyMs = await Promise.all(gateways.map((g) => fixture.untilReady(g.adminPort, 30_000)));
    await new Promise((r) => setTimeout(r, AFTER_READY_MS));
  } catch (error) {
    throw new Error(`${describe(error)}\n${whatTheGatewaysSaid(gateways)}`, { cause: error });
  } finally {
    running = false;
    await load;
  }
  const refusals = answers.filter((a) => a.kind === 'valid' && a.status === 503);
  return {
    answers,
    errors,
    errorCount,
    windowMs: refusals.length === 0 ? 0 : Math.max(...refusals.map((a) => a.at)),
    readyMs: readyMs.map((ms) => ms),
  };
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (cause: ${error.cause.message})` : '';
  // undici's socket errors name the connection (ports, bytes each way): old or new, which gateway.
  const socket = 'socket' in error ? ` ${JSON.stringify(error.socket)}` : '';
  return `${error.name}: ${error.message}${cause}${socket}`;
}

/** For a failed wait: whether each gateway still runs, its stderr and last log lines. */
function whatTheGatewaysSaid(gateways: GatewayProcess[]): string {
  return gateways
    .map((g, i) => {
      const { exitCode, signalCode } = g.child;
      const state = exitCode === null && signalCode === null ? 'running' : `exited ${exitCode ?? signalCode}`;
      const lines = g.logs.filter((line) => line['msg'] !== 'request').slice(-15);
      return `gateway ${i} (${state}); stderr: ${g.stderr().slice(-4000)}\nlast logs: ${JSON.stringify(lines)}`;
    })
    .join('\n');
}

/** Statuses by kind, for assertions and messages: `{ valid: { 200: 12, 503: 3 }, ... }`. */
export function tally(answers: Answer[]): Record<Kind, Record<number, number>> {
  const out: Record<Kind, Record<number, number>> = { valid: {}, 'bad-token': {}, 'revoked-key': {} };
  for (const { kind, status } of answers) out[kind][status] = (out[kind][status] ?? 0) + 1;
  return out;
}

/** `count` requests of one credential spread over the gateways; statuses in order sent. */
export async function spread(
  fixture: ScaleFixture,
  gateways: GatewayProcess[],
  authorization: string,
  count: number,
): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      fixture.call(gateways[i % gateways.length]!.port, authorization).then((r) => r.status),
    ),
  );
}

/** LIMIT + 10 requests of a fresh customer spread over the gateways; statuses in order sent. */
export async function pastTheLimit(fixture: ScaleFixture, gateways: GatewayProcess[]): Promise<number[]> {
  return spread(fixture, gateways, `Bearer ${await fixture.token(freshCustomer())}`, LIMIT + 10);
}

/** Two gateway processes on `env` (onStoreFailure: deny, so a store failure shows as 503). */
export function twoGateways(
  fixture: ScaleFixture,
  env: Record<string, string>,
): Promise<[GatewayProcess, GatewayProcess]> {
  return Promise.all([fixture.gateway(policy('deny'), env), fixture.gateway(policy('deny'), env)]);
}
