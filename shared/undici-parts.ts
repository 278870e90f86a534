/**
 * The parts of undici the gateway uses, each required from its own file. undici's index loads
 * every dispatcher, mock, cache store and interceptor, fetch, WebSocket and EventSource: 110
 * files, 55–97 ms of a warm `npm start`'s main thread, where these parts are 33 files and about
 * 37 ms (docs/performance.md). undici has no `exports` map, so its files are reachable; which
 * file holds which part is undici's own layout, not its documented API, so
 * `package-parts.unit.test.ts` holds each part identical to the index's: an undici release that
 * moves one fails that test, not a start.
 *
 * The index also mixes the request API (`request`, `stream`, …) into Dispatcher's prototype,
 * which a Pool's `request` needs: done here the same way (the same functions, so loading the
 * index later changes nothing). fetch is loaded with the index on its first call: only a
 * remote JWKS or an introspection endpoint needs it.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import { lazyModule } from './lazy-module.ts';

const require = createRequire(import.meta.url);

const Dispatcher = require('undici/lib/dispatcher/dispatcher.js') as { prototype: object };
Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js') as object);

export const Pool = require('undici/lib/dispatcher/pool.js') as typeof Undici.Pool;
export type Pool = Undici.Pool;
export const buildConnector = require('undici/lib/core/connect.js') as typeof Undici.buildConnector;
/** What `buildConnector` makes: opens one connection. */
export type Connector = Undici.buildConnector.connector;
export const errors = require('undici/lib/core/errors.js') as typeof Undici.errors;

const undiciIndex = lazyModule<typeof Undici>('undici');

/** undici's fetch, its package loaded on the first call. */
export const fetch: typeof Undici.fetch = (input, init) => undiciIndex().fetch(input, init);
