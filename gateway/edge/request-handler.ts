/**
 * The request handler every listener calls: a context per request, the composed stages, then
 * the response written, and the request accounted for once its response closed. Refusals are
 * responses by now (compose.ts); what can still fail here is writing, and a bug.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { HttpProblem, sendProblem } from '../../shared/errors.ts';
import { http2BodyFollows } from './http2.ts';
import { cutResponse, writeResponse } from './respond.ts';
import type { AnswerProgress, RequestAccounting } from '../observability/request-accounting.ts';
import { answerWithTunnel } from './tunnel-answer.ts';
import type { ClientRequest } from '../pipeline/client-request.ts';
import { ClientSignal } from '../pipeline/client-signal.ts';
import { ClientGoneError, createContext, type GatewayContext } from '../pipeline/context.ts';
import type { RequestEnd } from '../pipeline/live-handler.ts';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** A generation's handler: `end` hears once that the request's response has closed. */
export type GenerationHandler = (req: IncomingMessage, res: ServerResponse, end?: RequestEnd) => void;

export interface RequestHandlerDeps {
  run: (ctx: GatewayContext) => Promise<void>;
  log: Logger;
  clientIpOf: (req: IncomingMessage) => string;
  accounting: RequestAccounting;
  /** Fields on every answer (the listener's HSTS and nosniff), unless the response sets them. */
  answerHeaders?: Readonly<Record<string, string>>;
  /** Fields addressed to this gateway, stripped from every answer (edge/respond.ts). */
  gatewayFields?: readonly string[];
}

export function createRequestHandler(deps: RequestHandlerDeps): GenerationHandler {
  const { run, log, clientIpOf, accounting } = deps;
  const answerHeaders = deps.answerHeaders ?? {};

  async function handle(
    ctx: GatewayContext,
    res: ServerResponse,
    account: (progress: AnswerProgress) => void,
  ): Promise<void> {
    try {
      await run(ctx);
      if (ctx.response === undefined) throw new Error('no stage produced a response');
      const { tunnel } = ctx.response;
      if (tunnel !== undefined) {
        const status = answerWithTunnel(ctx.req, res, { ...ctx.response, tunnel }, answerHeaders);
        // The request is over once the connection is handed over; the tunnel has its own records.
        if (status !== undefined) account({ headersSent: true, statusCode: status, writableFinished: true });
        return;
      }
      await writeResponse(res, ctx.response, answerHeaders, deps.gatewayFields);
    } catch (error) {
      if (error instanceof ClientGoneError || res.destroyed) return;
      if (res.headersSent) {
        // Mid-body: the client must see a failure, never a truncated success.
        ctx.log.warn(
          { err: { name: (error as Error).name, code: (error as NodeJS.ErrnoException).code } },
          'response cut',
        );
        cutResponse(res);
        return;
      }
      // A problem before the head: the response writer's (an upstream body that broke before
      // it could be sent) is the client's answer; anything else is a bug.
      const problem =
        error instanceof HttpProblem
          ? error
          : new HttpProblem('ERR_INTERNAL', 'the gateway failed to handle this request');
      if (problem.code === 'ERR_INTERNAL') ctx.log.error({ err: error }, 'unexpected error');
      else ctx.log.warn({ code: problem.code }, 'answer refused before its head');
      for (const name in answerHeaders) res.setHeader(name, answerHeaders[name]!);
      const { correlationId } = ctx.upstream;
      if (correlationId !== '') res.setHeader('X-Request-Id', correlationId);
      sendProblem(res, problem, ctx.path);
    }
  }

  return function onRequest(req, res, end) {
    const timing = { startedMs: performance.now(), startedAt: Date.now() };
    const signal = new ClientSignal();
    const ctx = createContext(req, res, log, signal, clientIpOf(req), hasRequestBody(req) ? req : null);
    // Once: when the response closes, or sooner when the connection went to a tunnel (its
    // response closes only when the tunnel does).
    let accounted = false;
    const account = (progress: AnswerProgress) => {
      if (accounted) return;
      accounted = true;
      accounting.finished(ctx, progress, timing);
    };
    // 'close' ends every response, finished or cut, on HTTP/1.1 and HTTP/2 alike: the one
    // listener per request, which tells the pipeline's generation too (live-handler.ts).
    res.once('close', () => {
      end?.ended();
      if (!res.writableFinished) signal.abort();
      account(res);
    });
    void handle(ctx, res, account);
  };
}

/**
 * Whether the request carries a body: a non-zero Content-Length, a transfer coding, or an
 * HTTP/2 stream left open after its headers (h2 needs neither to send a body).
 */
function hasRequestBody(req: ClientRequest): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined && length !== '0') return true;
  return req.headers['transfer-encoding'] !== undefined || (length === undefined && http2BodyFollows(req));
}
