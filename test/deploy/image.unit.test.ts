/**
 * The image deploy/Dockerfile builds: its base pinned to one exact release (a digest cannot be
 * looked up from here: no registry is reachable; docs/deployment.md says how to pin one), its
 * user a number, and a build context (.dockerignore) that keeps keys, the git history and host
 * builds out of every layer (`COPY . .` copies whatever the context holds).
 */
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { read, ROOT } from './support/deploy-files.ts';

const dockerfile = read('deploy/Dockerfile');

/** The patterns of .dockerignore, as Docker reads them (comments and blank lines dropped). */
function ignorePatterns(): string[] {
  let text: string;
  try {
    text = read('.dockerignore');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** Docker's matching for the pattern forms .dockerignore uses: `dir`, `**\/name`, `*.ext`, `**\/*.ext`. */
function ignored(path: string, patterns: string[]): boolean {
  const segments = path.split('/');
  return patterns.some((pattern) => {
    const anywhere = pattern.startsWith('**/');
    const body = anywhere ? pattern.slice(3) : pattern;
    const matches = (segment: string) =>
      body.startsWith('*.') ? segment.endsWith(body.slice(1)) : segment === body;
    return anywhere
      ? segments.some(matches)
      : matches(segments[0]!) || (body.startsWith('*.') && !path.includes('/') && matches(path));
  });
}

describe('deploy/Dockerfile', () => {
  it('builds every stage from one exact Node release, the one the project runs on', () => {
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)]
      .map((m) => m[1]!)
      .filter((b) => b.includes(':') || b.includes('@'));
    expect(bases.length).toBeGreaterThanOrEqual(2);
    for (const base of bases)
      expect(base).toMatch(/^node:\d+\.\d+\.\d+-bookworm-slim(@sha256:[0-9a-f]{64})?$/);
    expect(new Set(bases).size).toBe(1);
    expect(bases[0]!.split(':')[1]!.split('.')[0]).toBe(process.versions.node.split('.')[0]);
  });

  it('sends no key, no git history and no host build as build context', () => {
    const patterns = ignorePatterns();
    const sent: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = relative(ROOT, join(dir, entry.name));
        if (ignored(path, patterns)) continue;
        if (entry.isDirectory()) walk(join(dir, entry.name));
        else sent.push(path);
      }
    };
    walk(ROOT);
    const forbidden = /^(\.git|\.portico|node_modules|dist|coverage)(\/|$)|(^|\/)\.portico\/|\.key$/;
    expect(sent.filter((path) => forbidden.test(path))).toEqual([]);
    for (const needed of [
      'package.json',
      'package-lock.json',
      'gateway/main.ts',
      'resource-service/main.ts',
      'scripts/internal-ca.ts',
    ])
      expect(sent, needed).toContain(needed);
    // The patterns hold even where this checkout has no such directory yet.
    for (const path of ['.portico/tls/key.pem', 'node_modules/x/index.js', '.git/HEAD', 'pki/ca.key'])
      expect(ignored(path, patterns), path).toBe(true);
  });
});
