/**
 * plainlyFresh (gateway/cache/rules/policy.ts) tells a plain fresh hit without the library's
 * evaluateRequest: for every stored response and request here, its verdict is exactly the one
 * the cache's lookup took from the library before (a response to use with nothing to
 * revalidate, and not stale), and with any freshness directive in the request it leaves the
 * verdict to the library.
 */
import { describe, expect, it } from 'vitest';
import { createPolicyFactory, plainlyFresh, requestView } from '../../../gateway/cache/rules/policy.ts';
import { parseCacheControl } from '../../../gateway/cache/rules/directives.ts';
import { readSemantics } from '../../../gateway/cache/rules/response-semantics.ts';

const T0 = Date.parse('2026-11-27T04:00:00Z');

const RESPONSES: Record<string, Record<string, string>> = {
  'max-age=60': { 'cache-control': 'max-age=60' },
  's-maxage=60, max-age=0': { 'cache-control': 's-maxage=60, max-age=0' },
  'max-age=60, must-revalidate': { 'cache-control': 'max-age=60, must-revalidate' },
  'max-age=10, stale-while-revalidate=100': { 'cache-control': 'max-age=10, stale-while-revalidate=100' },
  'no-cache': { 'cache-control': 'no-cache', etag: '"a"' },
  Expires: { expires: new Date(T0 + 30_000).toUTCString(), date: new Date(T0).toUTCString() },
  heuristic: { 'last-modified': new Date(T0 - 3_600_000).toUTCString(), date: new Date(T0).toUTCString() },
  'Vary: Accept-Encoding': { 'cache-control': 'max-age=60', vary: 'Accept-Encoding' },
  'Age: 50': { 'cache-control': 'max-age=60', age: '50' },
};

const REQUESTS: Record<string, Record<string, string>> = {
  plain: {},
  'Accept-Encoding': { 'accept-encoding': 'gzip' },
  'Cache-Control: no-store': { 'cache-control': 'no-store' },
  'Cache-Control: max-age=5': { 'cache-control': 'max-age=5' },
  'Cache-Control: min-fresh=30': { 'cache-control': 'min-fresh=30' },
  'Cache-Control: max-stale': { 'cache-control': 'max-stale' },
  'Cache-Control: no-cache': { 'cache-control': 'no-cache' },
};

function libraryVerdict(
  policy: ReturnType<ReturnType<typeof createPolicyFactory>['create']>,
  headers: Record<string, string>,
): boolean {
  const result = policy.evaluateRequest(requestView('/v1/orders/1', headers));
  return result.response !== undefined && result.revalidation === undefined && !policy.stale();
}

describe('plainlyFresh', () => {
  for (const [responseName, responseHeaders] of Object.entries(RESPONSES))
    it(`agrees with the library's evaluateRequest on ${responseName}, at every age`, () => {
      let now = T0;
      const factory = createPolicyFactory({
        now: () => now,
        heuristicFraction: 0.1,
        maxHeuristicSeconds: 86_400,
      });
      const policy = factory.create(requestView('/v1/orders/1', {}), {
        status: 200,
        headers: responseHeaders,
        semantics: readSemantics(responseHeaders, []),
        requestTime: T0,
        responseTime: T0,
      });
      const verdicts: boolean[] = [];
      for (const ageSeconds of [0, 9, 20, 59, 61, 500, 7200]) {
        now = T0 + ageSeconds * 1000;
        for (const [requestName, requestHeaders] of Object.entries(REQUESTS)) {
          const directives = parseCacheControl(requestHeaders['cache-control']);
          const library = libraryVerdict(policy, requestHeaders);
          const ours = plainlyFresh(policy, directives);
          // Ours answers "fresh" only when the library would; when it declines, the library is asked.
          if (ours) expect(library, `${requestName} at ${ageSeconds} s`).toBe(true);
          const asksTheLibrary = ['no-cache', 'max-age', 'min-fresh', 'max-stale'].some((name) =>
            directives.has(name),
          );
          if (!asksTheLibrary) expect(ours, `${requestName} at ${ageSeconds} s`).toBe(library);
          verdicts.push(ours);
        }
      }
      // Each response is exercised both ways where it can be (not every one is ever fresh).
      expect(verdicts).toContain(false);
    });
});
