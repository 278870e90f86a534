/**
 * Revalidation with the upstream: the stored response's validators sent in place of the
 * client's conditions (RFC 9111 section 4.3.1), and stale-while-revalidate's side call once
 * the client's answer is out (RFC 5861 section 3).
 */
import type { CacheRequest } from '../engine/cache-types.ts';
import type { Exchange, Validators } from './exchange.ts';
import type { HttpCache } from '../engine/http-cache.ts';
import type { StoredResponse } from '../store/entry-store.ts';
import { settleAnswer } from './answer.ts';

/**
 * stale-while-revalidate (RFC 5861 section 3): the stale answer goes out now; the
 * revalidation is a side call to the upstream once the client's response is complete, on a
 * fork of the request, so that it can never change the response the handler is writing.
 */
export function revalidateInBackground(
  exchange: Exchange,
  cache: HttpCache,
  request: CacheRequest,
  entry: StoredResponse,
): void {
  // A HEAD would bring back no body to store; the next GET revalidates instead. A GET with a
  // body is not replayed: its body went to no one and cannot be read again.
  if (entry.revalidating === true || request.method !== 'GET' || exchange.hasBody) return;
  entry.revalidating = true;
  exchange.onClosed(() => {
    if (exchange.signal.gone) {
      entry.revalidating = false;
      return;
    }
    const validators = validatorsOf(entry, request);
    const fill = cache.openFill(request.path);
    void (async () => {
      try {
        const response = await exchange.sideCall(validators);
        await settleAnswer(cache, request, fill, { entry, reason: 'stale' }, response, 'stale', 'side');
      } catch (error) {
        exchange.log.debug(
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

/** The stored response's validators, through http-cache-semantics (4.3.1). */
export function validatorsOf(entry: StoredResponse, request: CacheRequest): Validators {
  const headers = { ...request.view.headers };
  delete headers['if-none-match'];
  delete headers['if-modified-since'];
  const conditional = entry.policy.revalidationHeaders({ ...request.view, headers });
  const out: Validators = {};
  const etag = conditional['if-none-match'];
  const since = conditional['if-modified-since'];
  if (typeof etag === 'string') out['if-none-match'] = etag;
  // The library sends its normalized date; origins compare the exact value they sent.
  const lastModified = entry.headers['last-modified'];
  if (typeof since === 'string')
    out['if-modified-since'] = (Array.isArray(lastModified) ? lastModified[0] : lastModified) ?? since;
  return out;
}
