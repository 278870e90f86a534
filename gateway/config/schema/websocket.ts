/**
 * A route's `websocket` key: the route takes WebSocket connections (RFC 6455 over HTTP/1.1,
 * RFC 8441 over HTTP/2), relayed to its upstream over HTTP/1.1, within these bounds. Without
 * the key a route refuses every WebSocket handshake. Never inherited: each route opts in.
 */
import { Type, type Static } from '@sinclair/typebox';

export const WebSocketRouteSchema = Type.Object(
  {
    origins: Type.Array(Type.String(), {
      default: [],
      description:
        'Origins whose pages may open a connection (the handshake\'s `Origin`, as `https://app.example.com`); `"*"` any. ' +
        'A handshake with another `Origin` is refused with 403; one without `Origin` (not from a browser) is taken. ' +
        'Empty: no browser page may connect (cross-site WebSocket hijacking).',
    }),
    maxMessageBytes: Type.Integer({
      minimum: 1,
      maximum: 67_108_864,
      default: 1_048_576,
      description:
        'Largest message either side may send, in bytes; a larger one closes the connection with 1009 (message too big).',
    }),
    maxMessagesPerSecond: Type.Integer({
      minimum: 1,
      default: 100,
      description:
        'Messages the client may send in one second (counted per wall-clock second); past it the connection is closed with 1008 (policy violation).',
    }),
    idleTimeoutMs: Type.Integer({
      minimum: 100,
      default: 300_000,
      description:
        'A connection on which no message, ping or pong went either way for this long is closed with 1001 (going away).',
    }),
    maxLifetimeMs: Type.Integer({
      minimum: 100,
      default: 86_400_000,
      description:
        'A connection open this long is closed with 1001, whatever its traffic, so that no connection outlives a rotation of keys or deployments for ever.',
    }),
  },
  {
    additionalProperties: false,
    description:
      'Takes WebSocket connections on this route (docs/websocket.md): authenticated and rate limited at the handshake like any request, then relayed message by message to the upstream over HTTP/1.1. Not inherited.',
  },
);
export type WebSocketRoute = Static<typeof WebSocketRouteSchema>;

/** What the schema cannot say, for `routes[index].websocket`; each message is `path: problem`. */
export function checkWebSocketRoute(websocket: WebSocketRoute, path: string): string[] {
  const problems: string[] = [];
  if (websocket.origins.includes('*') && websocket.origins.length > 1)
    problems.push(`${path}.origins: "*" allows every origin and cannot be listed with others`);
  websocket.origins.forEach((origin, index) => {
    if (origin === '*') return;
    const url = URL.parse(origin);
    if (url === null || url.origin !== origin || !/^https?:$/.test(url.protocol))
      problems.push(
        `${path}.origins[${index}]: "${origin}" must be an origin as browsers send it, scheme://host[:port]`,
      );
  });
  return problems;
}
