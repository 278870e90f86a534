/**
 * GATEWAY_WORKERS read apart from the primary's machinery (workers.ts): checking the environment
 * before a start must not load node:cluster's users, prom-client and ioredis.
 */
import { availableParallelism } from 'node:os';

/** GATEWAY_WORKERS: unset or empty is 1, `auto` one per core; anything else must be a count. */
export function workerCount(env: NodeJS.ProcessEnv): number {
  const value = env['GATEWAY_WORKERS'];
  if (value === undefined || value === '') return 1;
  if (value === 'auto') return availableParallelism();
  const count = Number(value);
  if (!/^\d+$/.test(value) || count < 1 || count > 1024)
    throw new Error(`GATEWAY_WORKERS must be a count (1-1024) or "auto", got ${JSON.stringify(value)}`);
  return count;
}
