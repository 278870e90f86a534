/**
 * The `cache` config section: defaults for everything, every bad key refused.
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { CacheConfigSchema } from '../../../gateway/config/schema/cache.ts';

const validate = new Ajv({ allErrors: true, useDefaults: true, strict: false }).compile(CacheConfigSchema);

describe('cache config', () => {
  it('fills every field from its default', () => {
    const config = {};
    expect(validate(config)).toBe(true);
    expect(config).toEqual({
      enabled: true,
      maxBytes: 64 * 1024 * 1024,
      maxOwnerShare: 0.125,
      maxEntryBytes: 1024 * 1024,
      heuristicFraction: 0.1,
      maxHeuristicSeconds: 86400,
      targetedFields: ['portico-cache-control', 'cdn-cache-control'],
      collapse: { enabled: true, maxWaitMs: 5000 },
    });
  });

  it('refuses bad values and unknown keys', () => {
    for (const bad of [
      { maxBytes: -1 },
      { heuristicFraction: 2 },
      { enabled: 'yes' },
      { maxEntryBytes: 1.5 },
      { maxOwnerShare: 0 },
      { maxOwnerShare: 1.5 },
      { ttl: 5 },
      { targetedFields: ['cache-control'] },
      { targetedFields: ['CDN-Cache-Control'] },
      { targetedFields: ['cdn-cache-control', 'cdn-cache-control'] },
    ])
      expect(validate(structuredClone(bad)), JSON.stringify(bad)).toBe(false);
  });

  it('describes every field', () => {
    for (const [name, field] of Object.entries(CacheConfigSchema.properties))
      expect((field as { description?: string }).description, name).toBeTruthy();
  });
});
