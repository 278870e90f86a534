/**
 * The `cache` section of the gateway config. Every field has a type, a default and a
 * description; which routes the cache serves is the per-route `cache` flag. Its `collapse`
 * part: concurrent misses for one resource wait for the one request already on its way
 * upstream (cache/collapse.ts).
 */
import { Type, type Static } from '@sinclair/typebox';

/** Schema of `cache.collapse`. */
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

/** Schema of the `cache` config section; defaults fill what a file leaves out. */
export const CacheConfigSchema = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description:
        'Off: nothing is stored or served from the cache; the targeted headers are still stripped and ' +
        'writes still invalidate other replicas.',
    }),
    maxBytes: Type.Integer({
      minimum: 0,
      default: 64 * 1024 * 1024,
      description:
        'Memory the stored responses (bodies, headers, keys) may take; least recently used go first.',
    }),
    maxOwnerShare: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1,
      default: 0.125,
      description:
        'Largest share of maxBytes that the entries of one owner may take: one customer (under all its scope ' +
        "sets together), or the shared entries any caller may get (public routes). Past it, that owner's own " +
        'least recently used entries go first, so that one caller, or one public route flooded with query ' +
        "strings, cannot evict everyone else's.",
    }),
    maxEntryBytes: Type.Integer({
      minimum: 0,
      default: 1024 * 1024,
      description:
        'Largest response body stored, one combined from 206 pieces included; larger bodies are ' +
        'streamed through, never stored. Pieces held for combining take at most 4 times this.',
    }),
    heuristicFraction: Type.Number({
      minimum: 0,
      maximum: 1,
      default: 0.1,
      description:
        'Heuristic freshness (RFC 9111 section 4.2.2) as a fraction of the time since Last-Modified, ' +
        'used only for responses without explicit freshness that the RFC allows it for.',
    }),
    maxHeuristicSeconds: Type.Integer({
      minimum: 0,
      default: 86400,
      description: 'Upper bound of a heuristic freshness lifetime.',
    }),
    targetedFields: Type.Array(
      // Lowercase field names, as Node hands them over; Cache-Control itself is never targeted.
      Type.String({ pattern: "^(?!cache-control$)[a-z0-9!#$%&'*+.^_`|~-]+$" }),
      {
        default: ['portico-cache-control', 'cdn-cache-control'],
        uniqueItems: true,
        description:
          'Targeted cache-control fields (RFC 9213) this cache obeys, lowercase, in order of precedence: the ' +
          'first one present and valid replaces Cache-Control and Expires for this cache. Every one listed is ' +
          'stripped before a response leaves the gateway.',
      },
    ),
    collapse: Type.Optional(CollapseConfigSchema),
  },
  { additionalProperties: false, default: {}, description: 'The shared HTTP cache (RFC 9111) at the edge.' },
);
/** The validated `cache` section. */
export type CacheConfig = Static<typeof CacheConfigSchema>;
