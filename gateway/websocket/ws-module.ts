/**
 * ws, loaded on a route's first WebSocket rather than with the gateway: most gateways relay
 * none, and loading it is about 25 ms of a start's main thread (`npm start`'s warm start is
 * held to under a second). Synchronous, through `require`, so that the relay's server end is
 * made in the same turn as before; the upstream end's dial is the first use.
 */
import type WebSocket from 'ws';
import { lazyModule } from '../../shared/lazy-module.ts';

export const ws = lazyModule<typeof WebSocket>('ws');
