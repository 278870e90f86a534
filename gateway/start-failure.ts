/**
 * How a gateway start that cannot work ends (`npm run gateway`, `npm start`): a bad config file
 * keeps its own form (the file, then one problem per line, config/load.ts); anything else is
 * the one readable line every process entry writes (shared/start-failure.ts).
 */
import type { Logger } from 'pino';
import { reportStartFailure as reportAnyStartFailure } from '../shared/start-failure.ts';
import { ConfigError } from './config/load.ts';

/** Writes the line and the log line; the caller exits 1. */
export function reportStartFailure(error: unknown, log: Logger, command: string): void {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    log.fatal({ file: error.source, problems: error.problems }, 'invalid gateway config');
    return;
  }
  reportAnyStartFailure(error, log, command);
}
