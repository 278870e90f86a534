/**
 * A package loaded the first time it is used rather than when a module that may use it is
 * imported: what a start does not need, it does not pay for. Synchronous, through `require`,
 * so that whoever asks stays synchronous. Each use says why its package waits
 * (shared/ioredis-module.ts, gateway/config/yaml-module.ts, gateway/websocket/ws-module.ts,
 * undici's index in shared/undici-parts.ts).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** `specifier`'s exports on the first call, the same object on every later one. */
export function lazyModule<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(specifier) as T);
}
