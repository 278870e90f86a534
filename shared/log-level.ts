/**
 * LOG_LEVEL, judged before a logger is made from it: pino throws on a level it does not know,
 * from the logger's constructor, which would end the start with its stack trace instead of the
 * one readable line of start-failure.ts. Both processes take the same words.
 */
import { pino } from 'pino';

const LEVELS = [...Object.keys(pino.levels.values), 'silent'];

/** Why LOG_LEVEL cannot be used, or undefined when it can (unset or empty means info). */
export function logLevelProblem(env: NodeJS.ProcessEnv): string | undefined {
  const level = env['LOG_LEVEL'];
  if (level === undefined || level === '' || LEVELS.includes(level)) return undefined;
  return `LOG_LEVEL must be one of ${LEVELS.join(', ')}, got ${JSON.stringify(level)}`;
}

/** LOG_LEVEL when usable, else info: the logger must exist to report the bad value. */
export function usableLogLevel(env: NodeJS.ProcessEnv): string {
  return logLevelProblem(env) === undefined ? env['LOG_LEVEL'] || 'info' : 'info';
}
