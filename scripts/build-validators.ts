/**
 * The last step of `npm run build`: every validator the gateway and the resource service make at
 * start (the gateway's config schema, the service's request bodies), written into the build as
 * the validator cache's entries (`dist/validators/`, shared/validator-cache.ts), so that a built
 * process loads them instead of compiling them with Ajv. A process in a new container has no
 * cache of its own; without these it compiled about 400 KB of code at every start, and an idle
 * gateway held about 10 MiB more for it (docs/performance.md).
 *
 * The entries are made the way a process makes them (the same schemas, through the modules that
 * make them), so a schema added to either process is shipped without a list to keep here; an
 * entry's key holds the schema, Ajv's options and versions, so a stale one is never loaded.
 * Readable by all, writable by its owner alone: the image's user runs what root built.
 */
import { chmodSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, parseConfig } from '../gateway/config/load.ts';
import { useShippedValidators, useValidatorCache, validatorCacheCounts } from '../shared/validator-cache.ts';

/**
 * Writes the entries into `dir` (emptied first) and returns how many validators it holds. Once
 * per process: the route modules make theirs when first imported.
 */
export async function buildValidators(dir: string): Promise<number> {
  rmSync(dir, { recursive: true, force: true });
  // Made here, never found: an entry already shipped would not be written again.
  useShippedValidators(undefined);
  useValidatorCache(dir);
  const before = validatorCacheCounts.compiled + validatorCacheCounts.loaded;
  try {
    // The defaults follow the environment, but they are the entry's parameters, not its code:
    // an empty environment makes the entry every environment loads.
    parseConfig({}, { env: {} });
  } catch (error) {
    // The schema was compiled before the file's content was judged.
    if (!(error instanceof ConfigError)) throw error;
  }
  // The route table imports every route module, and each makes its body validators on import.
  await import('../resource-service/routes/table.ts');
  useValidatorCache(undefined);
  chmodSync(dir, 0o755);
  for (const name of readdirSync(dir)) chmodSync(join(dir, name), 0o644);
  return validatorCacheCounts.compiled + validatorCacheCounts.loaded - before;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = fileURLToPath(new URL('../dist/validators/', import.meta.url));
  const count = await buildValidators(dir);
  process.stderr.write(`build: ${count} validators written to dist/validators\n`);
}
