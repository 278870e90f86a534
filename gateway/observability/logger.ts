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
    // Asynchronous, batched stdout: lines gather up to 4 KiB (or 250 ms, whichever comes
    // first) and go out in one write. A write per request line cost ~6% of the gateway's CPU
    // under load in a profile. pino flushes what is pending when the process exits (the crash
    // guard exits too); a SIGKILL can lose the last 250 ms of log lines, never audit records.
    options.destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 250 }),
  );
}
