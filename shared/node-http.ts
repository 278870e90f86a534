/**
 * node:http, required rather than imported. An ESM import of node:http makes Node build the
 * module's ESM facade, which reads every export, its lazy `WebSocket`, `CloseEvent` and
 * `MessageEvent` getters included, and so loads Node's bundled undici (a 745 KiB source) for
 * classes Portico never uses: 40–50 ms of a start and 2.2 MiB of heap in every process
 * (docs/performance.md), twice that at the heap's peak. `require` reads no export it is not
 * asked for. Types still come from node:http: a type import loads nothing.
 * `test/first-run/start-modules.test.ts` holds the gateway and `npm start` to it.
 */
import { createRequire } from 'node:module';
import type * as Http from 'node:http';

const http = createRequire(import.meta.url)('node:http') as typeof Http;

export const { createServer, METHODS, STATUS_CODES, validateHeaderName, validateHeaderValue } = http;
export const Server = http.Server;
export type Server = Http.Server;
export const ServerResponse = http.ServerResponse;
export type ServerResponse = Http.ServerResponse;
