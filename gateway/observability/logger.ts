/**
 * Structured JSON logs, one line per event. Request logs carry the path without its query
 * and never a header value, so credentials cannot reach them.
 */
import { pino, type Logger } from 'pino';

export function createLogger(options: { level?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'portico-gateway' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Belt and braces: should anyone log a request or headers whole, these stay out.
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', '*.authorization', '*.cookie'],
        censor: '[redacted]',
      },
    },
    // Asynchronous stdout: lines written while a write is pending go out together. A
    // synchronous write per request line was a syscall per request (~20 CPU-µs here); pino
    // flushes what is pending when the process exits.
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
