/**
 * rate-limiter-flexible's in-memory limiter, required from its own files. The package's index
 * loads every store it supports (Mongo, MySQL, DynamoDB, Prisma, etcd, …): 37 files and 15–27
 * ms of a warm `npm start`, where these two are 6 files and about 3 ms (docs/performance.md).
 * The package has no `exports` map; which file holds which class is its own layout, so
 * `package-parts.unit.test.ts` holds both identical to the index's.
 */
import { createRequire } from 'node:module';
import type * as Flexible from 'rate-limiter-flexible';

const require = createRequire(import.meta.url);

export const RateLimiterMemory =
  require('rate-limiter-flexible/lib/RateLimiterMemory.js') as typeof Flexible.RateLimiterMemory;
export type RateLimiterMemory = Flexible.RateLimiterMemory;
export const RateLimiterRes =
  require('rate-limiter-flexible/lib/RateLimiterRes.js') as typeof Flexible.RateLimiterRes;
export type RateLimiterRes = Flexible.RateLimiterRes;
