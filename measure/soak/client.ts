/**
 * One request of the soak, sent through a keep-alive undici Agent that trusts the gateway's
 * development certificate, and classified as it comes back: a status its request allowed, or
 * an unexpected answer (any other status, a failed content check, a connection error or a
 * timeout).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Agent, request } from 'undici';
import type { Kind, Tally } from './tally.ts';

/** Longest a request may take, body included, before it counts as an unexpected timeout. */
const REQUEST_TIMEOUT_MS = 15_000;

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface Exchange {
  kind: Kind;
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Statuses this request may get; anything else is unexpected. */
  expect: readonly number[];
  /** A check of an expected answer's content: returns what is wrong, or undefined. */
  check?: (answer: Answer) => string | undefined;
}

/**
 * A keep-alive agent to the gateway. `localAddress` gives a client its own source address on
 * the loopback network (any of 127.0.0.0/8 reaches 127.0.0.1 on Linux), so the gateway counts
 * its failed authentications apart from everyone else's, as it would for a separate client.
 */
export function createAgent(caCert: string, localAddress?: string): Agent {
  return new Agent({
    connect: { ca: caCert },
    ...(localAddress === undefined ? {} : { localAddress }),
    headersTimeout: REQUEST_TIMEOUT_MS,
    bodyTimeout: REQUEST_TIMEOUT_MS,
  });
}

/** Reads a JSON answer; undefined when it is not JSON (that is then what the check reports). */
export function parseJson(answer: Answer): unknown {
  try {
    return JSON.parse(answer.text) as unknown;
  } catch {
    return undefined;
  }
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
}

export class SoakClient {
  readonly #base: string;
  readonly #agent: Agent;
  readonly #tally: Tally;

  constructor(base: string, agent: Agent, tally: Tally) {
    this.#base = base;
    this.#agent = agent;
    this.#tally = tally;
  }

  /**
   * Sends one request and counts its answer. Resolves with the answer when it was one the
   * request allowed, undefined otherwise (already counted as unexpected, with a sample).
   */
  async send(exchange: Exchange): Promise<Answer | undefined> {
    const what = `${exchange.method} ${exchange.path}`;
    let answer: Answer;
    try {
      const response = await request(`${this.#base}${exchange.path}`, {
        method: exchange.method,
        headers: exchange.headers,
        ...(exchange.body === undefined ? {} : { body: exchange.body }),
        dispatcher: this.#agent,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      answer = { status: response.statusCode, headers: response.headers, text: await response.body.text() };
    } catch (error) {
      const { code, message } = error as { code?: string; message?: string };
      const label = `connection error ${code ?? (error as Error).name}`;
      this.#tally.unexpectedAnswer(exchange.kind, 'error', label, what, message ?? String(error));
      return undefined;
    }
    const status = String(answer.status);
    const detail = () =>
      `${answer.status} request-id ${header(answer.headers, 'x-request-id')} ` +
      `cache-status ${header(answer.headers, 'cache-status') || '-'} body ${answer.text.slice(0, 300)}`;
    if (!exchange.expect.includes(answer.status)) {
      this.#tally.unexpectedAnswer(exchange.kind, status, status, what, detail());
      return undefined;
    }
    const problem = exchange.check?.(answer);
    if (problem !== undefined) {
      this.#tally.unexpectedAnswer(exchange.kind, status, `${status} ${problem}`, what, detail());
      return undefined;
    }
    this.#tally.expected(exchange.kind, status);
    return answer;
  }
}
