/**
 * An HTTP client for fault tests: every call ends, within its own deadline, in a complete
 * answer or a named failure (never an unhandled error), and records how long it took, so a
 * test can assert on hangs, truncated answers and refused connections as well as on statuses.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import type { Agent, IncomingHttpHeaders } from 'node:http';
import { IDENTITY_HEADER, signAssertion } from '../../shared/identity-assertion.ts';
import type { AssertionKey } from '../../shared/identity-assertion.ts';
import type { Principal } from '../../shared/principal.ts';
import { ALL_CUSTOMER_SCOPES } from '../support/service.ts';

export interface Outcome {
  /** Present when a complete answer arrived. */
  status?: number;
  headers?: IncomingHttpHeaders;
  body?: any;
  /** Why no complete answer arrived: `timeout`, `ECONNREFUSED`, `ECONNRESET`, `aborted`... */
  failure?: string;
  /** The request was fully written to the socket (as opposed to refused before that). */
  sent: boolean;
  /** When it was, on the same clock as `startedAt`. */
  sentAt?: number;
  /** Milliseconds since the test's clock origin when the call started, and its duration. */
  startedAt: number;
  ms: number;
}

export interface CallOptions {
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
  agent?: Agent;
  /** Called once the request is fully written. */
  onSent?: () => void;
}

const origin = performance.now();
export const now = (): number => performance.now() - origin;

export function customer(prefix = 'cus'): Principal {
  const customerId = `${prefix}_${randomUUID().slice(0, 12)}`;
  return { subject: `user-of-${customerId}`, customerId, scopes: ALL_CUSTOMER_SCOPES, authMethod: 'jwt' };
}

/** A client of one service URL that signs every request as `principal`. */
export function signedClient(baseUrl: string, key: AssertionKey, agent?: Agent) {
  return (principal: Principal, method: string, path: string, options: CallOptions = {}) =>
    call(baseUrl, method, path, {
      ...options,
      ...(agent === undefined || options.agent !== undefined ? {} : { agent }),
      headers: {
        ...options.headers,
        [IDENTITY_HEADER]: signAssertion(key, principal, { method, target: path, requestId: randomUUID() }),
      },
    });
}

export function call(
  baseUrl: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Outcome> {
  const startedAt = now();
  const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
  const headers: Record<string, string | number> = { ...options.headers };
  if (payload !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = payload.length;
  }
  return new Promise((resolve) => {
    let sentAt: number | undefined;
    let settled = false;
    const finish = (outcome: Omit<Outcome, 'sent' | 'startedAt' | 'ms'>) => {
      if (settled) return;
      settled = true;
      resolve({
        ...outcome,
        sent: sentAt !== undefined,
        ...(sentAt === undefined ? {} : { sentAt }),
        startedAt,
        ms: now() - startedAt,
      });
    };
    const req = request(`${baseUrl}${path}`, {
      method,
      headers,
      agent: options.agent ?? false,
      timeout: options.timeoutMs ?? 15_000,
    });
    req.once('finish', () => {
      sentAt = now();
      options.onSent?.();
    });
    req.once('timeout', () => {
      finish({ failure: 'timeout' });
      req.destroy();
    });
    req.once('error', (error: NodeJS.ErrnoException) => finish({ failure: error.code ?? error.message }));
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      // 'aborted' without 'end': the connection closed before the whole body came.
      res.once('aborted', () => finish({ failure: 'aborted' }));
      res.once('error', () => finish({ failure: 'aborted' }));
      res.once('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const json = /json/.test(res.headers['content-type'] ?? '') && text !== '';
        finish({ status: res.statusCode ?? 0, headers: res.headers, body: json ? JSON.parse(text) : text });
      });
    });
    req.end(payload);
  });
}

/** Repeats `step` from `workers` loops until stopped; returns every outcome. */
export function runLoad<T>(workers: number, step: (worker: number, iteration: number) => Promise<T>) {
  let running = true;
  const results: T[] = [];
  const loops = Array.from({ length: workers }, async (_, worker) => {
    for (let iteration = 0; running; iteration++) results.push(await step(worker, iteration));
  });
  return {
    results,
    async stop(): Promise<T[]> {
      running = false;
      await Promise.all(loops);
      return results;
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 25 ms until it is true; throws naming `what` after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(25);
  }
}
