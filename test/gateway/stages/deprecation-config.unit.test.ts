/**
 * The per-route `deprecation` config, validated by gateway/config/load.ts: every bad key by its
 * path, and the order of the deprecation and sunset dates. deprecation.test.ts runs valid
 * configs through a gateway.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../gateway/config/load.ts';

describe('deprecation config', () => {
  const route = (deprecation: unknown) => ({
    routes: [{ prefix: '/v1', upstream: 'http://127.0.0.1:1', deprecation }],
  });

  it('reports every bad key by path, at once', () => {
    expect(() =>
      parseConfig(route({ at: '2026-06-01', sunset: '2026-05-01', link: 'ftp://example.com/x', extra: 1 })),
    ).toThrow(/routes\[0\]\.deprecation\.extra: unknown key/);
    try {
      parseConfig(route({ at: 'soon', sunset: '2026-05-01', link: 'not a url' }));
      expect.unreachable();
    } catch (error) {
      expect((error as { problems: string[] }).problems).toEqual([
        'routes[0].deprecation.at: must be a date (2026-06-01) or an RFC 3339 date-time',
        'routes[0].deprecation.link: must be an http: or https: URL',
      ]);
    }
  });

  it('refuses a sunset before the deprecation', () => {
    expect(() => parseConfig(route({ at: '2026-06-01', sunset: '2026-05-31T23:59:59Z' }))).toThrow(
      /routes\[0\]\.deprecation\.sunset: must not be before at/,
    );
  });

  it('requires at, and accepts a sunset equal to it', () => {
    expect(() => parseConfig(route({ sunset: '2026-06-01' }))).toThrow(/deprecation.*at/);
    expect(() => parseConfig(route({ at: '2026-06-01', sunset: '2026-06-01T00:00:00Z' }))).not.toThrow();
  });
});
