/**
 * The parts of undici and rate-limiter-flexible that Portico requires from their own files
 * (shared/undici-parts.ts, gateway/rate-limit/memory-limiter-parts.ts) are the very ones the
 * packages' indexes export: an upgrade that moves a file, or a part to another file, fails here.
 */
import { createRequire } from 'node:module';
import type * as Flexible from 'rate-limiter-flexible';
import type * as Undici from 'undici';
import { describe, expect, it } from 'vitest';
import { RateLimiterMemory, RateLimiterRes } from '../../gateway/rate-limit/memory-limiter-parts.ts';
import { buildConnector, errors, fetch, Pool } from '../../shared/undici-parts.ts';

const require = createRequire(import.meta.url);

describe('package parts required from their own files', () => {
  it("undici's Pool, buildConnector and errors are the index's", () => {
    const undici = require('undici') as typeof Undici;
    expect(Pool).toBe(undici.Pool);
    expect(buildConnector).toBe(undici.buildConnector);
    expect(errors).toBe(undici.errors);
    expect(new errors.RequestAbortedError()).toBeInstanceOf(undici.errors.UndiciError);
  });

  it("a Pool has undici's request API, which the index mixes in and so does undici-parts.ts", () => {
    const api = require('undici/lib/api/index.js') as { request: unknown };
    expect(Reflect.get(Pool.prototype, 'request')).toBe(api.request);
  });

  it("fetch is undici's, loaded on its first call", async () => {
    // A URL no dispatcher may call: refused before any socket, by undici's own fetch.
    await expect(fetch('ftp://example.invalid/')).rejects.toThrow(TypeError);
  });

  it("rate-limiter-flexible's RateLimiterMemory and RateLimiterRes are the index's", async () => {
    const flexible = require('rate-limiter-flexible') as typeof Flexible;
    expect(RateLimiterMemory).toBe(flexible.RateLimiterMemory);
    expect(RateLimiterRes).toBe(flexible.RateLimiterRes);
    const limiter = new RateLimiterMemory({ points: 1, duration: 1 });
    await limiter.consume('k');
    await expect(limiter.consume('k')).rejects.toBeInstanceOf(flexible.RateLimiterRes);
  });
});
