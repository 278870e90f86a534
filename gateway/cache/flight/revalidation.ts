/**
 * Revalidation with the upstream: the stored response's validators sent in place of the
 * client's conditions (RFC 9111 section 4.3.1), and stale-while-revalidate's side call once
 * the client's answer is out (RFC 5861 section 3).
 */
import type { Readable } from 'node:stream';
import type { GatewayContext, GatewayResponse } from '../../pipeline/context.ts';
import type { UpstreamHeaders } from '../../pipeline/upstream-headers.ts';
import type { Forward } from '../../upstream/forward.ts';
import { readBody } from './body-tee.ts';
import type { CacheRequest, Fill, HttpCache, StoredResponse } from '../http-cache.ts';

/**
 * stale-while-revalidate (RFC 5861 section 3): the stale answer goes out now; the
 * revalidation is a side call to the upstream once the client's response is complete, so
 * that it can never change the response the handler is writing.
 */
export function revalidateInBackground(
  ctx: GatewayContext,
  forward: Forward,
  cache: HttpCache,
  request: CacheRequest,
  entry: StoredResponse,
): void {
  // A HEAD would bring back no body to store; the next GET revalidates instead. A GET with a
  // body is not replayed: its body went to no one and cannot be read again.
  if (entry.revalidating === true || request.method !== 'GET' || ctx.upstream.body !== null) return;
  entry.revalidating = true;
  ctx.res.once('close', () => {
    if (ctx.signal.gone) {
      entry.revalidating = false;
      return;
    }
    setValidators(ctx.upstream.headers, validatorsOf(entry, request));
    const fill = cache.beginFill(request.path);
    void (async () => {
      try {
        await refreshFrom(await forward(ctx), cache, request, entry, fill);
      } catch (error) {
        ctx.log.debug(
          { err: { name: (error as Error).name, message: (error as Error).message } },
          'background revalidation failed',
        );
      } finally {
        fill.end();
        entry.revalidating = false;
      }
    })();
  });
}

/** Stores what a background revalidation brought back: a fresher copy, or nothing. */
async function refreshFrom(
  response: GatewayResponse,
  cache: HttpCache,
  request: CacheRequest,
  entry: StoredResponse,
  fill: Fill,
): Promise<void> {
  if (response.status === 304) {
    response.body?.resume();
    cache.freshen(entry, request, fill, {
      status: 304,
      headers: response.headers,
      semantics: cache.semantics(response.headers),
    });
    return;
  }
  if (response.status >= 500) {
    discard(response.body);
    return;
  }
  cache.remove(entry);
  const decision = cache.decide(request, fill, {
    status: response.status,
    headers: response.headers,
    semantics: cache.semantics(response.headers),
  });
  if (!decision.store) {
    discard(response.body);
    return;
  }
  const body = await readBody(response.body, cache.config.maxEntryBytes);
  if (body !== undefined) cache.commit(fill, decision.build(body));
}

/**
 * Sends the stored response's validators upstream in place of the client's own conditions
 * (RFC 9111 section 4.3.1); the client's conditions are then answered here.
 */
export function setValidators(
  headers: UpstreamHeaders,
  validators: { 'if-none-match'?: string; 'if-modified-since'?: string },
): void {
  for (const name of ['if-none-match', 'if-modified-since'] as const) {
    const value = validators[name];
    if (value === undefined) headers.delete(name);
    else headers.set(name, value);
  }
}

/** The stored response's validators, through http-cache-semantics (4.3.1). */
export function validatorsOf(
  entry: StoredResponse,
  request: CacheRequest,
): { 'if-none-match'?: string; 'if-modified-since'?: string } {
  const headers = { ...request.view.headers };
  delete headers['if-none-match'];
  delete headers['if-modified-since'];
  const conditional = entry.policy.revalidationHeaders({ ...request.view, headers });
  const out: { 'if-none-match'?: string; 'if-modified-since'?: string } = {};
  const etag = conditional['if-none-match'];
  const since = conditional['if-modified-since'];
  if (typeof etag === 'string') out['if-none-match'] = etag;
  // The library sends its normalized date; origins compare the exact value they sent.
  const lastModified = entry.headers['last-modified'];
  if (typeof since === 'string')
    out['if-modified-since'] = (Array.isArray(lastModified) ? lastModified[0] : lastModified) ?? since;
  return out;
}

/** Drops an upstream body nobody will read; its abort error has no one to reach. */
export function discard(body: Readable | null): void {
  if (body === null) return;
  body.on('error', () => {});
  body.destroy();
}
