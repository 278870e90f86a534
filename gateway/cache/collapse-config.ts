/**
 * The `cache.collapse` config: concurrent misses for one resource wait for the one request
 * already on its way upstream (collapse.ts).
 */
import { Type, type Static } from '@sinclair/typebox';

export const CollapseConfigSchema = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description: 'Off: every miss goes upstream, however many arrive together.',
    }),
    maxWaitMs: Type.Integer({
      minimum: 1,
      maximum: 60000,
      default: 5000,
      description:
        'Longest a miss waits for the request in flight for the same resource; past it, it goes upstream itself.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Collapsed misses: while one request for a resource is on its way upstream, others for it (same partition, same Accept-Encoding) wait for it and are served what it stored, when it may be served to them; otherwise they go upstream themselves.',
  },
);
export type CollapseConfig = Static<typeof CollapseConfigSchema>;

export const DEFAULT_COLLAPSE: CollapseConfig = { enabled: true, maxWaitMs: 5000 };
