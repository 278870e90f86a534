/**
 * WebSockets in Prometheus (`portico_websocket_*`): open now, opened and closed (by close
 * code), and the message bytes and messages relayed each way, per route. Bytes are counted
 * as messages pass, so a long connection shows its traffic before it ends.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface WebSocketMetrics {
  opened(route: string): void;
  relayed(route: string, direction: Direction, bytes: number): void;
  closed(route: string, code: number): void;
}

/** `in`: from the client to the upstream; `out`: back to the client. */
export type Direction = 'in' | 'out';

export function createWebSocketMetrics(registry: Registry): WebSocketMetrics {
  const open = new Gauge({
    name: 'portico_websocket_connections',
    help: 'WebSocket connections open now, by route.',
    labelNames: ['route'] as const,
    registers: [registry],
    // Workers: each relays its own WebSockets; the gateway's are all of them.
    aggregator: 'sum',
  });
  const opened = new Counter({
    name: 'portico_websocket_opened_total',
    help: 'WebSocket connections opened (handshake taken by the upstream), by route.',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  const closed = new Counter({
    name: 'portico_websocket_closed_total',
    help: 'WebSocket connections ended, by route and the close code that ended them (1006: cut without a close frame).',
    labelNames: ['route', 'code'] as const,
    registers: [registry],
  });
  const bytes = new Counter({
    name: 'portico_websocket_message_bytes_total',
    help: 'Message payload bytes relayed, by route and direction (in: client to upstream; out: upstream to client).',
    labelNames: ['route', 'direction'] as const,
    registers: [registry],
  });
  const messages = new Counter({
    name: 'portico_websocket_messages_total',
    help: 'Messages relayed, by route and direction (in: client to upstream; out: upstream to client).',
    labelNames: ['route', 'direction'] as const,
    registers: [registry],
  });
  return {
    opened(route) {
      open.inc({ route });
      opened.inc({ route });
    },
    relayed(route, direction, size) {
      messages.inc({ route, direction });
      bytes.inc({ route, direction }, size);
    },
    closed(route, code) {
      open.dec({ route });
      closed.inc({ route, code: String(code) });
    },
  };
}
