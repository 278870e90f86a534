/**
 * The resource service's log: the gateway's line shape (gateway/observability/logger.ts), so
 * that one query reads both: `level`, `time` as ISO 8601 text, `service` naming the process,
 * then the event's fields and `msg`. pino's defaults (epoch milliseconds, `pid`, `hostname`)
 * are left out: the orchestrator already labels each line with its pod and host.
 */
import { pino, type DestinationStream, type Logger } from 'pino';

export const SERVICE_NAME = 'portico-resource-service';

export function createServiceLogger(level: string, destination: DestinationStream): Logger {
  return pino(
    { level, base: { service: SERVICE_NAME }, timestamp: pino.stdTimeFunctions.isoTime },
    destination,
  );
}
