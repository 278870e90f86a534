/**
 * How a start that cannot work ends (`npm run gateway`, `npm start`): one readable line on
 * stderr for the operator at a terminal (what is wrong, and what to do), one fatal log line for
 * machines with the same words and the error's fields, and no stack trace unless LOG_LEVEL is
 * debug: a busy port or a bad variable is the operator's to fix, not a bug to debug. A bad
 * config file keeps its own form: the file, then one problem per line (config/load.ts).
 */
import type { Logger } from 'pino';
import { DataDirInUseError } from '../shared/data-dir-lock.ts';
import { SecretNotPrivateError } from '../shared/data-dir-secrets.ts';
import { PortUnavailableError } from '../shared/port-unavailable.ts';
import { ConfigError } from './config/load.ts';

/** Writes the line and the log line; the caller exits 1. */
export function reportStartFailure(error: unknown, log: Logger, command: string): void {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    log.fatal({ file: error.source, problems: error.problems }, 'invalid gateway config');
    return;
  }
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
  // The stack is for whoever debugs Portico itself, at their asking.
  const stack = log.isLevelEnabled('debug') && error instanceof Error ? { stack: error.stack } : {};
  return { err: { ...(typeof code === 'string' ? { code } : {}), ...stack } };
}
