/**
 * How a start that cannot work ends, for every process entry (the gateway, `npm start`, the
 * resource service): one readable line on stderr for the operator at a terminal (what is wrong,
 * and what to do), one fatal log line for machines with the same words and the error's fields,
 * and no stack trace unless LOG_LEVEL is debug: a busy port or a bad variable is the operator's
 * to fix, not a bug to debug.
 */
import type { Logger } from 'pino';
import { DataDirInUseError } from './data-dir-lock.ts';
import { SecretNotPrivateError } from './data-dir-secrets.ts';
import { PortUnavailableError } from './port-unavailable.ts';

/** Writes `command: message` on stderr and the fatal log line; the caller chooses the exit code. */
export function reportStartFailure(error: unknown, log: Logger, command: string): void {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`${command}: ${message.replaceAll('\n', ' ')}\n`);
  log.fatal(fieldsOf(error, log), message);
}

function fieldsOf(error: unknown, log: Logger): Record<string, unknown> {
  if (error instanceof DataDirInUseError)
    return { code: error.code, holder: error.holder, lockFile: error.lockFile };
  if (error instanceof SecretNotPrivateError) return { code: error.code, path: error.path };
  if (error instanceof PortUnavailableError)
    return { code: error.code, setting: error.setting, port: error.port, host: error.host };
  const code = (error as { code?: unknown } | undefined)?.code;
  const err = { ...(typeof code === 'string' ? { code } : {}), ...stackOf(error, log) };
  // An empty `err: {}` says nothing: the line then has the gateway's plain shape.
  return Object.keys(err).length === 0 ? {} : { err };
}

/** The stack is for whoever debugs Portico itself, at their asking. */
function stackOf(error: unknown, log: Logger): { stack?: string } {
  return log.isLevelEnabled('debug') && error instanceof Error && error.stack !== undefined
    ? { stack: error.stack }
    : {};
}
