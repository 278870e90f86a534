/**
 * One call of the introspection endpoint (RFC 7662 §2.1): the token as a form field with the
 * `access_token` hint, the gateway's client authentication, a deadline. Anything but a JSON
 * object in a 200 (or, with `signed`, a signed JWT that holds: signed-answer.ts) is the
 * endpoint being unavailable (the token may be good), never a refusal of the token and never
 * an "allow": the caller answers 503.
 */
import type { Logger } from 'pino';
import type { ClientCredential } from './client-credential.ts';
import { SIGNED_ANSWER_TYPE, type SignedAnswer } from './signed-answer.ts';

/** A POST with a form body; undici's fetch has this shape (tests pass one trusting their CA). */
export type IntrospectionFetch = (
  url: string,
  init: { method: 'POST'; signal: AbortSignal; headers: Record<string, string>; body: string },
) => Promise<{
  ok: boolean;
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}>;

export type IntrospectionCall = { ok: true; answer: Record<string, unknown> } | { ok: false; reason: string };

/** An answer is a handful of claims; more than this is not one. */
const MAX_ANSWER_CHARS = 64 * 1024;

export interface EndpointOptions {
  url: string;
  credential: ClientCredential;
  fetch: IntrospectionFetch;
  timeoutMs: number;
  logger: Logger;
  /** Reads an answer asked for as a signed JWT (RFC 9701); plain JSON answers when absent. */
  signed?: (text: string) => Promise<SignedAnswer>;
}

export function introspectionEndpoint(
  options: EndpointOptions,
): (token: string) => Promise<IntrospectionCall> {
  const { url, credential, fetch, timeoutMs, logger, signed } = options;
  const unavailable = (reason: string, detail: Record<string, unknown> = {}): IntrospectionCall => {
    // The token never goes to the log; what went wrong with the endpoint does.
    logger.warn({ endpoint: url, ...detail }, `introspection failed: ${reason}`);
    return { ok: false, reason: 'introspection endpoint unavailable' };
  };

  return async (token) => {
    let status: number;
    let text: string;
    let contentType: string | null;
    try {
      const proof = await credential();
      const body = new URLSearchParams({ token, token_type_hint: 'access_token', ...proof.form });
      const response = await fetch(url, {
        method: 'POST',
        signal: AbortSignal.timeout(timeoutMs),
        headers: {
          ...proof.headers,
          accept: signed === undefined ? 'application/json' : SIGNED_ANSWER_TYPE,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: body.toString(),
      });
      status = response.status;
      contentType = response.headers.get('content-type');
      text = await response.text();
    } catch (error) {
      return unavailable('endpoint unreachable', { err: (error as Error).name, code: errorCode(error) });
    }
    if (status === 401 || status === 403)
      return unavailable("the endpoint refused the gateway's client authentication", {
        status,
        ...oauthError(text),
      });
    if (status !== 200) return unavailable('unexpected status', { status, ...oauthError(text) });
    if (text.length > MAX_ANSWER_CHARS) return unavailable('answer too large', { chars: text.length });
    const read = signed === undefined ? readJsonAnswer(text) : await signed(text);
    return read.ok ? read : unavailable(read.reason, { contentType: contentType?.slice(0, 100) });
  };
}

function readJsonAnswer(text: string): IntrospectionCall {
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'answer is not JSON' };
  }
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
    return { ok: false, reason: 'answer is not a JSON object' };
  return { ok: true, answer: answer as Record<string, unknown> };
}

/** The RFC 6749 §5.2 error of a refusal, for the operator: the provider's words, never ours. */
function oauthError(text: string): { error?: string; description?: string } {
  try {
    const { error, error_description: description } = JSON.parse(text) as Record<string, unknown>;
    return {
      ...(typeof error === 'string' ? { error: error.slice(0, 100) } : {}),
      ...(typeof description === 'string' ? { description: description.slice(0, 300) } : {}),
    };
  } catch {
    return {};
  }
}

function errorCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}
