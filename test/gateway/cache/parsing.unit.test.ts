/**
 * The readers a cache depends on: Cache-Control (RFC 9111 section 5.2), the targeted field
 * (RFC 9213, a Structured Fields dictionary), HTTP-dates, conditionals and invalidation targets.
 */
import { describe, expect, it } from 'vitest';
import { notModified } from '../../../gateway/cache/answer/conditional.ts';
import { deltaSeconds, parseCacheControl, parseTargeted } from '../../../gateway/cache/rules/directives.ts';
import { parseHttpDate } from '../../../gateway/foundation/http-date.ts';
import { invalidationTargets } from '../../../gateway/cache/rules/invalidation-targets.ts';

describe('Cache-Control', () => {
  it('reads names case-insensitively, quoted arguments whole, and the first of duplicates', () => {
    const cc = parseCacheControl([
      'MaX-AgE=60, extension="max-age=1, private"',
      'max-age=5, no-cache="a, b"',
    ]);
    expect(cc.get('max-age')).toBe('60');
    expect(cc.get('extension')).toBe('max-age=1, private');
    expect(cc.has('private')).toBe(false);
    expect(cc.get('no-cache')).toBe('a, b');
  });

  it('ignores a directive with space before "=", and keeps one with space after "=" invalid', () => {
    expect(parseCacheControl('max-age =100').has('max-age')).toBe(false);
    expect(deltaSeconds(parseCacheControl('max-age= 100').get('max-age'))).toBeUndefined();
  });

  it('accepts delta-seconds as digits only, capped at 2^31 (1.2.2)', () => {
    expect(deltaSeconds('003600')).toBe(3600);
    expect(deltaSeconds('99999999999')).toBe(2147483648);
    for (const bad of ['-1', '1.5', '100a', 'a100', "'3600'", '', true] as const)
      expect(deltaSeconds(bad)).toBeUndefined();
  });
});

describe('targeted field (RFC 9213)', () => {
  it('parses a dictionary, with booleans false as absent and parameters ignored', () => {
    const parsed = parseTargeted('max-age=30, private;x=1, no-store=?0, stale-if-error=60');
    expect([...(parsed ?? [])]).toEqual([
      ['max-age', '30'],
      ['private', true],
      ['stale-if-error', '60'],
    ]);
  });

  it('ignores the whole field on a parse error, so Cache-Control applies', () => {
    for (const bad of ['max-age=30,,', 'Max-Age=30', 'max-age=30 s-maxage=1', 'max-age="30', '', ' ,'])
      expect(parseTargeted(bad)).toBeUndefined();
  });
});

describe('HTTP-date', () => {
  const expected = Date.UTC(1994, 10, 6, 8, 49, 37);
  it('reads the three forms of RFC 9110 section 5.6.7', () => {
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(expected);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', Date.UTC(2026, 0, 1))).toBe(expected);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994')).toBe(expected);
    expect(parseHttpDate('SUN, 06 NOV 1994 08:49:37 gmt')).toBe(expected);
  });

  it('refuses what only looks like a date', () => {
    for (const bad of [
      '0',
      'Thu, 18 Aug 2050 02:01:18 UTC',
      'Thu, 18 Aug 50 02:01:18 GMT',
      'Thu 18 Aug 2050 02:01:18 GMT',
      'Thu, 18  Aug  2050 02:01:18 GMT',
      'Thu, 18-Aug-2050 02:01:18 GMT',
      'Thu, 18 Aug 2050 02.01.18 GMT',
      'Thu, 18 Aug 2050 2:01:18 GMT',
      'Thu, 31 Feb 2050 02:01:18 GMT',
      '2050-08-18T02:01:18Z',
    ])
      expect(parseHttpDate(bad), bad).toBeUndefined();
  });
});

describe('conditional requests against a stored response', () => {
  const stored = { etag: 'W/"v1"', 'last-modified': 'Sun, 06 Nov 1994 08:49:37 GMT' };
  it('matches If-None-Match weakly, in a list, or *', () => {
    expect(notModified({ 'if-none-match': '"x", "v1"' }, stored)).toBe(true);
    expect(notModified({ 'if-none-match': '*' }, stored)).toBe(true);
    expect(notModified({ 'if-none-match': '"v2"' }, stored)).toBe(false);
  });
  it('ignores If-Modified-Since when If-None-Match is present (RFC 9110 section 13.1.3)', () => {
    expect(
      notModified({ 'if-none-match': '"v2"', 'if-modified-since': 'Mon, 07 Nov 1994 00:00:00 GMT' }, stored),
    ).toBe(false);
    expect(notModified({ 'if-modified-since': 'Mon, 07 Nov 1994 00:00:00 GMT' }, stored)).toBe(true);
    expect(notModified({ 'if-modified-since': 'Sat, 05 Nov 1994 00:00:00 GMT' }, stored)).toBe(false);
    expect(notModified({ 'if-modified-since': 'garbage' }, stored)).toBe(false);
  });
});

describe('invalidation targets (RFC 9111 section 4.4)', () => {
  it('takes the target, same-origin Location and Content-Location, and Portico-Invalidates', () => {
    expect(
      invalidationTargets('/v1/payments', '/v1/payments?x=1', 'api.example', {
        location: '/v1/payments/p1',
        'content-location': 'https://api.example/v1/payments/p1/receipt?download=1',
        'portico-invalidates': '</v1/orders/o1>, </v1/customers/c1/invoices>, <nope>',
      }),
    ).toEqual([
      '/v1/payments',
      '/v1/payments/p1',
      '/v1/payments/p1/receipt',
      '/v1/orders/o1',
      '/v1/customers/c1/invoices',
    ]);
  });
  it('never takes a URI on another host', () => {
    expect(
      invalidationTargets('/v1/items', '/v1/items', 'api.example', {
        location: 'https://elsewhere.example/v1/victim',
        'content-location': '//elsewhere.example/v1/victim2',
      }),
    ).toEqual(['/v1/items']);
  });
});
