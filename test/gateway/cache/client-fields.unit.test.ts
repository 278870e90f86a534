/**
 * A whole answer from a stored response (stored-answer.ts) takes its fields from a copy made
 * once per entry (client-fields.ts): the stages above the cache see every field the client will
 * get and none addressed to the gateway, nothing is deleted from the copy on the way (a delete
 * leaves an object slow to read for every stage after it), and the per-answer fields stay per
 * answer.
 */
import { describe, expect, it } from 'vitest';
import { ClientFields } from '../../../gateway/cache/answer/client-fields.ts';
import { storedAnswer } from '../../../gateway/cache/answer/stored-answer.ts';
import { gatewayOnlyFields } from '../../../gateway/cache/rules/gateway-fields.ts';
import { createPolicyFactory, requestView } from '../../../gateway/cache/rules/policy.ts';
import { readSemantics } from '../../../gateway/cache/rules/response-semantics.ts';
import type { StoredResponse } from '../../../gateway/cache/store/entry-store.ts';

const T0 = Date.parse('2026-11-27T04:00:00Z');
const TARGETED = ['portico-cache-control', 'cdn-cache-control'];

function stored(status: number, headers: Record<string, string | string[]>, body: string): StoredResponse {
  let now = T0;
  const factory = createPolicyFactory({ now: () => now, heuristicFraction: 0.1, maxHeuristicSeconds: 0 });
  const policy = factory.create(requestView('/v1/orders/1', {}), {
    status,
    headers,
    semantics: readSemantics(headers, TARGETED),
    requestTime: T0,
    responseTime: T0,
  });
  now += 3_000;
  return {
    key: 'k',
    primary: 'k',
    path: '/v1/orders/1',
    owner: 'shared',
    status,
    headers,
    body: Buffer.from(body),
    policy,
    semantics: readSemantics(headers, TARGETED),
    varyValues: new Map(),
    storedAt: T0,
  };
}

const STORED_FIELDS = {
  'content-type': 'application/json',
  'cache-control': 'private',
  'portico-cache-control': 'max-age=30',
  'cdn-cache-control': 'max-age=60',
  'portico-invalidates': '</v1/orders>',
  'transfer-encoding': 'chunked',
  etag: '"v1"',
  link: ['</v1/orders>; rel="collection"'],
};

const GET = { method: 'GET', headers: {} };

describe('a whole answer from a stored response', () => {
  it('carries every stored field but the gateway’s own and Transfer-Encoding, then Age, Content-Length, Cache-Status', () => {
    const entry = stored(200, STORED_FIELDS, '{"id":"1"}');
    const answer = storedAnswer(entry, GET, { hit: true }, new ClientFields(gatewayOnlyFields(TARGETED)));
    expect(answer.status).toBe(200);
    expect(Object.entries(answer.headers)).toEqual([
      ['content-type', 'application/json'],
      ['cache-control', 'private'],
      ['etag', '"v1"'],
      ['link', ['</v1/orders>; rel="collection"']],
      ['age', '3'],
      ['content-length', '10'],
      ['cache-status', 'Portico; hit; ttl=27'],
    ]);
    expect(answer.bufferedBody?.toString()).toBe('{"id":"1"}');
    // The stored response itself is never changed.
    expect(entry.headers).toEqual(STORED_FIELDS);
  });

  it('is a fresh object each time, whatever a stage did to the last one', () => {
    const entry = stored(200, STORED_FIELDS, '{"id":"1"}');
    const fields = new ClientFields(gatewayOnlyFields(TARGETED));
    const first = storedAnswer(entry, GET, { hit: true }, fields);
    delete first.headers['etag'];
    first.headers['vary'] = 'Origin';
    const second = storedAnswer(entry, GET, { hit: true }, fields);
    expect(second.headers['etag']).toBe('"v1"');
    expect(second.headers['vary']).toBeUndefined();
  });

  it('of a 204 keeps its Transfer-Encoding as stored and adds no Content-Length', () => {
    const entry = stored(204, { 'cache-control': 'max-age=60', 'transfer-encoding': 'chunked' }, '');
    const answer = storedAnswer(entry, GET, { hit: true }, new ClientFields(gatewayOnlyFields(TARGETED)));
    expect(answer.headers['transfer-encoding']).toBe('chunked');
    expect(answer.headers['content-length']).toBeUndefined();
  });
});
