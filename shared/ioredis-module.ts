/**
 * ioredis, loaded the first time a connection is made rather than when a module that may make
 * one is imported: a gateway without Redis (every `npm start` without REDIS_URL) never needs
 * it, and loading it costs about as much CPU as a tenth of a warm start (its command table is
 * built at load). Synchronous, through `require`, so that making a client stays synchronous.
 */
import type * as IORedisModule from 'ioredis';
import { lazyModule } from './lazy-module.ts';

export const ioredis = lazyModule<typeof IORedisModule>('ioredis');
