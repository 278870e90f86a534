/**
 * The layers of docs/architecture.md ("Layout"), read from the sources: a folder of gateway/
 * or resource-service/ imports only folders of a lower layer (or, among the subsystems of
 * gateway/, the one pair the layout names), so that no two folders import each other and a
 * shared type never again sits in a room that imports its users. No server.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { relativeSpecifiers, sourceFiles } from './support/imports.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/** gateway/'s folders by layer, bottom to top; `gateway` is the root files. */
const GATEWAY_LAYERS: Record<string, number> = {
  shared: 0,
  foundation: 1,
  config: 2,
  pipeline: 3,
  // The subsystems: audit, then observability (metrics and logs the others report to), then
  // the rest, which import neither each other nor anything above them.
  audit: 4,
  observability: 4.1,
  compression: 4.2,
  identity: 4.2,
  'rate-limit': 4.2,
  cors: 4.2,
  routing: 4.2,
  upstream: 4.2,
  cache: 4.2,
  // Above upstream/, whose target choice, headers and TLS settings its upgrades reuse.
  websocket: 4.3,
  stages: 5,
  edge: 6,
  admin: 6,
  gateway: 7,
};
/** Imports between folders of one layer that the layout allows. */
const SIDEWAYS = ['admin -> edge'];
/** Imports that still run up the layers, each with its reason; fixing one removes it here. */
const KNOWN_UPWARD = [
  // The hygiene stage adapts the edge's framing rules; moving them down needs the h2 check
  // (edge/http2.ts) below stages/ as well.
  'gateway/stages/hygiene.ts -> gateway/edge/http-hygiene.ts',
];

/** resource-service/'s folders by layer, bottom to top; `resource-service` is its root files. */
const SERVICE_LAYERS: Record<string, number> = {
  shared: 0,
  model: 1,
  db: 1,
  domain: 2,
  openapi: 2,
  data: 3,
  http: 4,
  routes: 5,
  'api-docs': 6,
  'resource-service': 7,
};

/** The folder `path` (relative to the repository) belongs to, for `top`'s layer table. */
function folderOf(top: string, path: string): string {
  if (path.startsWith('shared/')) return 'shared';
  const rest = path.slice(top.length + 1).split('/');
  return rest.length === 1 ? top : (rest[0] ?? top);
}

/** Each import of `top`'s files that does not run down its layers, as `file -> target`. */
function importsAgainstLayers(top: string, layers: Record<string, number>, sideways: string[]): string[] {
  const offenders: string[] = [];
  for (const file of sourceFiles(join(ROOT, top))) {
    const from = relative(ROOT, file);
    for (const specifier of relativeSpecifiers(readFileSync(file, 'utf8'))) {
      const to = relative(ROOT, resolve(dirname(file), specifier));
      const a = folderOf(top, from);
      const b = folderOf(top, to);
      if (a === b || sideways.includes(`${a} -> ${b}`)) continue;
      const below = (layers[b] ?? Infinity) < (layers[a] ?? -Infinity);
      if (!below) offenders.push(`${from} -> ${to}`);
    }
  }
  return offenders.sort();
}

describe('the layers of the source folders', () => {
  it('finds what it checks (control): with shared/ put on top, imports of it are reported', () => {
    expect(folderOf('gateway', 'gateway/cache/engine/http-cache.ts')).toBe('cache');
    expect(folderOf('gateway', 'gateway/build.ts')).toBe('gateway');
    expect(importsAgainstLayers('gateway', { ...GATEWAY_LAYERS, shared: 99 }, SIDEWAYS)).toContain(
      'gateway/build.ts -> shared/lifecycle.ts',
    );
  });

  it('gateway/: every import runs down the layers, but for the known ones', () => {
    expect(importsAgainstLayers('gateway', GATEWAY_LAYERS, SIDEWAYS)).toEqual(KNOWN_UPWARD);
  });

  it('resource-service/: every import runs down the layers', () => {
    expect(importsAgainstLayers('resource-service', SERVICE_LAYERS, [])).toEqual([]);
  });
});
