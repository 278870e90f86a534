/**
 * Opens a route's upstream end of a WebSocket: an HTTP/1.1 upgrade to a target the balancer
 * picks, whatever protocol the client came in on, with the headers the proxy would send (the
 * forwarding fields and the signed identity assertion) and the TLS settings the proxy's pools
 * use for that origin (`proxy.upstreamTls`: CAs, client certificate, server name). Resolves
 * once the upstream has switched protocols; a refusal or failure is a 502 or 504 problem.
 */
import type { ConnectionOptions } from 'node:tls';
import type WebSocket from 'ws';
import { HttpProblem } from '../../shared/errors.ts';
import type { AssertionKey } from '../../shared/identity-assertion.ts';
import type { ProxyConfig } from '../config/schema/upstream.ts';
import { ClientGoneError, type GatewayContext } from '../pipeline/context.ts';
import { pickMember } from '../upstream/balancer.ts';
import { unavailableProblem } from '../upstream/circuit-breaker.ts';
import { upstreamHeaders } from '../upstream/forward.ts';
import type { RouteUpstreams } from '../upstream/route-upstreams.ts';
import { createTlsOptions } from '../upstream/upstream-tls.ts';
import type { Handshake } from './handshake.ts';
import { ws } from './ws-module.ts';

export interface DialDeps {
  routes: RouteUpstreams;
  assertionKeys?: readonly AssertionKey[] | undefined;
}

/** Opens the upstream end for a handshake the stages have let through. */
export type Dial = (ctx: GatewayContext, handshake: Handshake, maxMessageBytes: number) => Promise<WebSocket>;

export function createDial(proxy: ProxyConfig, deps: DialDeps): Dial {
  const signingKey = deps.assertionKeys?.[0];
  // Made on an origin's first WebSocket, as the pools make their connectors for the origins
  // routes name: a setting for an origin no WebSocket goes to is never read here.
  const tlsByOrigin = new Map<string, () => ConnectionOptions>();
  const tlsOf = (origin: string): ConnectionOptions => {
    let options = tlsByOrigin.get(origin);
    if (options === undefined) {
      const index = proxy.upstreamTls.findIndex((entry) => new URL(entry.origin).origin === origin);
      options = createTlsOptions(proxy.upstreamTls[index], `proxy.upstreamTls[${index}]`);
      tlsByOrigin.set(origin, options);
    }
    return options();
  };

  return async function dial(ctx, handshake, maxMessageBytes) {
    const route = ctx.upstream.route;
    if (route === undefined) throw new Error('a WebSocket needs the route stage before it');
    const set = deps.routes.of(route);
    const member = pickMember(set);
    if (member === undefined) throw unavailableProblem(set, proxy.circuitBreaker.retryAfterSeconds);
    const origin = new URL(member.url);
    const secure = origin.protocol === 'https:';
    const url = `${secure ? 'wss' : 'ws'}://${origin.host}${ctx.upstream.target}`;
    const socket = new (ws())(url, [...handshake.protocols], {
      headers: headerObject(upstreamHeaders(ctx, proxy, signingKey)),
      // No compression on either hop: a relay that inflates is open to compression bombs, and
      // the messages pass through as they are.
      perMessageDeflate: false,
      maxPayload: maxMessageBytes,
      handshakeTimeout: proxy.connectTimeoutMs + proxy.responseTimeoutMs,
      followRedirects: false,
      ...(secure ? tlsOf(origin.origin) : {}),
    });
    return await opened(socket, ctx, member.url);
  };
}

/** Resolves with the socket once open; rejects with the problem to answer the client. */
function opened(socket: WebSocket, ctx: GatewayContext, target: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const onGone = () => {
      socket.terminate();
      reject(new ClientGoneError());
    };
    ctx.signal.once('abort', onGone);
    const settle = (outcome: () => void) => {
      ctx.signal.off('abort', onGone);
      socket.removeAllListeners('unexpected-response');
      outcome();
    };
    // Not read until the relay listens (relay.ts resumes it): a message the upstream sends at
    // once would otherwise be emitted to no one while the client's end is being answered.
    socket.once('open', () => {
      socket.pause();
      settle(() => resolve(socket));
    });
    socket.once('unexpected-response', (request, response) => {
      response.resume();
      request.destroy();
      ctx.log.warn({ upstream: target, status: response.statusCode }, 'upstream refused the WebSocket');
      settle(() =>
        reject(
          new HttpProblem(
            'ERR_BAD_GATEWAY',
            `the upstream answered ${response.statusCode} to the WebSocket handshake`,
          ),
        ),
      );
    });
    socket.once('error', (error: Error & { code?: string }) => {
      socket.terminate();
      ctx.log.warn(
        { upstream: target, code: error.code, message: error.message },
        'upstream WebSocket failed',
      );
      const timedOut = /timed out/i.test(error.message);
      settle(() =>
        reject(
          timedOut
            ? new HttpProblem('ERR_GATEWAY_TIMEOUT', 'the upstream did not take the WebSocket in time')
            : new HttpProblem('ERR_BAD_GATEWAY', 'the upstream WebSocket could not be opened'),
        ),
      );
    });
  });
}

/**
 * The proxy's flat header list as the object ws sends, without the handshake fields ws writes
 * itself (a second `Sec-WebSocket-Key` would make the upstream refuse it).
 */
function headerObject(flat: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = flat[i]!.toLowerCase();
    if (name.startsWith('sec-websocket-')) continue;
    const value = flat[i + 1]!;
    out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
  }
  return out;
}
