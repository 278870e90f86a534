/**
 * The gateway's WebSockets: takes a handshake the stages let through (its route opted in, its
 * origin allowed, its upstream end open), answers it with a tunnel that relays the connection
 * once the handler hands it over, and keeps every relay open until it ends, so that a drain
 * can close them all with 1001 (going away). Each is counted (metrics.ts), and audited: the
 * handshake's record says `open`, and a `close` record follows with its code and bytes.
 */
import { createHash } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import { HttpProblem } from '../../shared/errors.ts';
import type { AuditEntry } from '../audit/audit-record.ts';
import { routeLabel } from '../config/schema/route-name.ts';
import type { WebSocketRoute } from '../config/schema/websocket.ts';
import type { GatewayContext, GatewayResponse } from '../pipeline/context.ts';
import type { Handshake } from './handshake.ts';
import type { WebSocketMetrics } from './metrics.ts';
import { startRelay, type Relay, type RelayOutcome } from './relay.ts';
import type { Dial } from './upstream-dial.ts';
import { ws } from './ws-module.ts';

export interface WebSocketsDeps {
  dial: Dial;
  metrics: WebSocketMetrics;
  /** Where the close records go; none in tests without an audit log. */
  record?: ((entry: AuditEntry) => void) | undefined;
  log: Logger;
}

/** RFC 6455 §1.3: the GUID the accept value hashes with the client's key. */
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** How long a close handshake may take before the socket is cut (ws's own default is 30 s). */
const CLOSE_TIMEOUT_MS = 5000;
/** How long a drain waits for the close handshakes before it cuts what remains. */
const CLOSE_GRACE_MS = 1000;

export class WebSockets {
  readonly #deps: WebSocketsDeps;
  readonly #open = new Set<Relay>();
  #closing = false;

  constructor(deps: WebSocketsDeps) {
    this.#deps = deps;
  }

  /** Open relays now. */
  get size(): number {
    return this.#open.size;
  }

  /**
   * The answer to a handshake on a route that takes WebSockets: 403 for an origin the route
   * does not allow, the upstream's refusal as 502 or 504, else a 101 whose tunnel relays.
   */
  async accept(ctx: GatewayContext, handshake: Handshake, config: WebSocketRoute): Promise<GatewayResponse> {
    if (!originAllowed(config, handshake.origin))
      throw new HttpProblem('ERR_FORBIDDEN', 'this origin may not open a WebSocket on this route');
    if (this.#closing) throw new HttpProblem('ERR_SERVICE_UNAVAILABLE', 'the gateway is shutting down');
    const upstream = await this.#deps.dial(ctx, handshake, config.maxMessageBytes);
    ctx.facts.websocket = 'open';
    const headers: Record<string, string> = { upgrade: 'websocket', connection: 'upgrade' };
    if (handshake.key !== undefined) headers['sec-websocket-accept'] = acceptValue(handshake.key);
    if (upstream.protocol !== '') headers['sec-websocket-protocol'] = upstream.protocol;
    const closeRecord = closeRecordOf(ctx);
    return {
      status: 101,
      headers,
      body: null,
      tunnel: {
        open: (connection) => this.#relay(connection, upstream, config, closeRecord),
        abandon: () => upstream.terminate(),
      },
    };
  }

  /** Closes every open WebSocket with 1001, waits a moment for the close handshakes, cuts the rest. */
  async closeAll(reason = 'the gateway is shutting down'): Promise<void> {
    this.#closing = true;
    if (this.#open.size === 0) return;
    const relays = [...this.#open];
    this.#deps.log.info({ open: relays.length }, 'closing WebSockets: 1001 going away');
    for (const relay of relays) relay.close(1001, reason);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(relays.map((relay) => relay.ended)),
      new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS))),
    ]);
    clearTimeout(timer);
    for (const relay of this.#open) relay.terminate();
  }

  #relay(connection: Duplex, upstream: WebSocket, config: WebSocketRoute, closeRecord: AuditEntry): void {
    const { metrics, log } = this.#deps;
    const route = closeRecord.route ?? 'none';
    // `null`: ws's server side, which does not mask what it sends (RFC 6455 §5.1). The options
    // are WebSocketServer's: without a close timeout ws would cut the socket 1 ms after its
    // close frame instead of waiting for the peer's.
    const client = new (ws() as unknown as ServerSocket)(null, undefined, {
      autoPong: true,
      closeTimeout: CLOSE_TIMEOUT_MS,
    });
    // ws's server side on a connection that is already switched: an upgraded socket, or an
    // HTTP/2 stream (which ws takes as any Duplex). What WebSocketServer does after its own
    // handshake; ours went through the pipeline instead.
    (client as unknown as ServerSide).setSocket(connection, Buffer.alloc(0), {
      allowSynchronousEvents: true,
      maxPayload: config.maxMessageBytes,
      skipUTF8Validation: false,
    });
    const relay = startRelay(client, upstream, config, (direction, bytes) =>
      metrics.relayed(route, direction, bytes),
    );
    this.#open.add(relay);
    metrics.opened(route);
    // Opened while a drain ran (its upstream end was being dialled): closed as the others.
    if (this.#closing) relay.close(1001, 'the gateway is shutting down');
    void relay.ended.then((outcome) => {
      this.#open.delete(relay);
      metrics.closed(route, outcome.code);
      this.#deps.record?.({ ...closeRecord, time: Date.now(), websocket: closeFacts(outcome) });
      log.info({ requestId: closeRecord.requestId, route, ...outcome }, 'WebSocket closed');
    });
  }
}

/** ws's constructor as WebSocketServer calls it (its typings know no options beside `null`). */
type ServerSocket = new (
  address: null,
  protocols: undefined,
  options: { autoPong: boolean; closeTimeout: number },
) => WebSocket;

/** ws's method that starts a server-side socket on a connection; not in its typings. */
interface ServerSide {
  setSocket(
    socket: Duplex,
    head: Buffer,
    options: { allowSynchronousEvents: boolean; maxPayload: number; skipUTF8Validation: boolean },
  ): void;
}

/** An `Origin` the route allows; no `Origin` at all is a client that is not a browser page. */
export function originAllowed(config: Pick<WebSocketRoute, 'origins'>, origin: string | undefined): boolean {
  if (origin === undefined) return true;
  return config.origins.includes('*') || config.origins.includes(origin.toLowerCase());
}

/** RFC 6455 §4.2.2: base64 of SHA-1 of the key and the GUID. */
export function acceptValue(key: string): string {
  return createHash('sha1').update(`${key}${GUID}`).digest('base64');
}

/** The close record's fields that the handshake knew (the request's own record has the rest). */
function closeRecordOf(ctx: GatewayContext): AuditEntry {
  const { principal, requestId, clientRequestId, clientIp, route } = ctx.upstream;
  return {
    requestId,
    clientRequestId,
    traceId: ctx.facts.traceId,
    subject: principal?.subject,
    customerId: principal?.customerId,
    keyId: principal?.keyId,
    clientAddress: clientIp,
    method: ctx.req.method ?? 'GET',
    path: ctx.path,
    route: route === undefined ? 'none' : routeLabel(route),
    status: 101,
    authOutcome: ctx.facts.auth?.outcome ?? 'none',
  };
}

function closeFacts(outcome: RelayOutcome): AuditEntry['websocket'] {
  return { event: 'close', ...outcome };
}
