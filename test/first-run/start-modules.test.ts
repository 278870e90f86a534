/**
 * What `npm start` loads before it answers: its first step (scripts/start.ts) starts the
 * embedded database's thread with no package loaded, and its second (start-prepare.ts) checks
 * the environment and locks the data dir with little loaded, so that the database opens beside
 * the rest; and a start without Redis never loads ioredis (shared/ioredis-module.ts),
 * whose load alone is about a tenth of a warm start's CPU, nor one without a config file the
 * YAML parser, nor ws before the first WebSocket.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../support/run-command.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The files under node_modules that importing `modules` loads in a fresh Node process, as
 * `package/path`; and `node:internal/deps/undici` when Node loaded its own bundled undici.
 */
async function filesLoadedBy(modules: string[]): Promise<string[]> {
  const script = `
    import { createRequire } from 'node:module';
    import { registerHooks } from 'node:module';
    const seen = new Set();
    const inPackages = (file) => /node_modules\\/(.*)$/.exec(file)?.[1];
    registerHooks({
      resolve(specifier, context, next) {
        const resolved = next(specifier, context);
        const file = inPackages(resolved.url);
        if (file) seen.add(file);
        return resolved;
      },
    });
    for (const module of ${JSON.stringify(modules)}) await import(new URL(module, 'file://${ROOT}/').href);
    for (const file of Object.keys(createRequire(import.meta.url).cache)) {
      const inPackage = inPackages(file);
      if (inPackage) seen.add(inPackage);
    }
    for (const builtin of process.moduleLoadList)
      if (builtin.endsWith('internal/deps/undici/undici')) seen.add('node:internal/deps/undici');
    console.log(JSON.stringify([...seen].sort()));
  `;
  const result = await runCommand(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] },
    timeoutMs: 60_000,
  });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '[]') as string[];
}

/** The packages under node_modules that importing `modules` loads, in a fresh Node process. */
async function packagesLoadedBy(modules: string[]): Promise<string[]> {
  const files = await filesLoadedBy(modules);
  return [...new Set(files.map((file) => /^((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1] ?? file))].sort();
}

/** What a start step imports for its use (not its types), relative to the project. */
function stepImports(step: string): string[] {
  const source = readFileSync(join(ROOT, step), 'utf8');
  return [...source.matchAll(/^import (?!type )[^;]*? from '(\.[^']+)';/gms)].map((match) =>
    join('scripts', match[1]!),
  );
}

describe("npm start's modules", () => {
  it("its first step loads no package before it starts the embedded database's thread", async () => {
    const imports = stepImports('scripts/start.ts');
    expect(imports).toContain('resource-service/db/embedded-thread.ts');
    expect(await packagesLoadedBy(imports)).toEqual([]);
  });

  it('its second step loads none of the servers, the database or Redis', async () => {
    const imports = stepImports('scripts/start-prepare.ts');
    expect(imports.length).toBeGreaterThan(5);
    const loaded = await packagesLoadedBy(imports);
    expect(loaded).toContain('pino');
    for (const heavy of [
      'ioredis',
      'undici',
      'polka',
      'postgres',
      'ajv',
      '@electric-sql/pglite',
      'prom-client',
    ])
      expect(loaded, heavy).not.toContain(heavy);
  });

  it('the gateway and the service load without ioredis when Redis is not used', async () => {
    const loaded = await packagesLoadedBy(['scripts/start-portico.ts']);
    // The check sees packages at all: the gateway's own are there.
    expect(loaded).toContain('undici');
    expect(loaded).not.toContain('ioredis');
    // Nor the YAML parser without a config file (gateway/config/yaml-module.ts).
    expect(loaded).not.toContain('yaml');
    // Nor ws before a route's first WebSocket (gateway/websocket/ws-module.ts).
    expect(loaded).not.toContain('ws');
  });

  it('the gateway and the service load the parts of undici, jose and rate-limiter-flexible they use, not their indexes', async () => {
    const loaded = await filesLoadedBy(['scripts/start-portico.ts']);
    // The parts are there: the check sees these packages' files at all.
    expect(loaded).toContain('undici/lib/dispatcher/pool.js');
    expect(loaded).toContain('jose/dist/webapi/jwt/verify.js');
    expect(loaded).toContain('rate-limiter-flexible/lib/RateLimiterMemory.js');
    // Each index loads every part of its package (shared/undici-parts.ts says the cost).
    expect(loaded).not.toContain('undici/index.js');
    expect(loaded).not.toContain('jose/dist/webapi/index.js');
    expect(loaded).not.toContain('rate-limiter-flexible/index.js');
  });

  it('neither the gateway nor the service makes Node load its own undici (shared/node-http.ts)', async () => {
    // The check sees it at all: an ESM import of node:http loads it.
    expect(await filesLoadedBy(['shared/node-http.ts'])).not.toContain('node:internal/deps/undici');
    const probe = `data:text/javascript,import 'node:http';`;
    expect(await filesLoadedBy([probe])).toContain('node:internal/deps/undici');
    for (const entry of ['gateway/run.ts', 'scripts/start-portico.ts'])
      expect(await filesLoadedBy([entry]), entry).not.toContain('node:internal/deps/undici');
  });
});
