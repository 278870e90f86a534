/**
 * `node scripts/lint-openapi.ts [spectral options]`
 *
 * Lints the OpenAPI document the service serves, built in-process from the same code, with
 * Spectral and the ruleset in `.spectral.yaml` (spectral:oas + OWASP API Security). Prints
 * every finding; exits 1 when any is an error, 2 when Spectral itself could not run.
 * Extra arguments go to `spectral lint` as they are (e.g. `--format json`).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from '../resource-service/api-docs/document.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

// The CLI of the installed package, run by this same Node: no npx, no global spectral.
const cliManifest = require.resolve('@stoplight/spectral-cli/package.json');
const { bin } = JSON.parse(readFileSync(cliManifest, 'utf8')) as { bin: { spectral: string } };
const cli = join(dirname(cliManifest), bin.spectral);

const dir = mkdtempSync(join(tmpdir(), 'portico-openapi-'));
let status: number;
try {
  // .spectral.yaml's per-location overrides name this file.
  const document = join(dir, 'portico-openapi.json');
  writeFileSync(document, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
  const result = spawnSync(
    process.execPath,
    [
      cli,
      'lint',
      document,
      '--ruleset',
      join(root, '.spectral.yaml'),
      '--fail-severity',
      'error',
      ...process.argv.slice(2),
    ],
    { cwd: root, stdio: 'inherit' },
  );
  if (result.error !== undefined) throw result.error;
  // Spectral: 0 clean, 1 findings at or above --fail-severity, 2 a ruleset or runtime failure.
  status = result.status ?? 2;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (status === 0) process.stdout.write('lint-openapi: no errors\n');
else if (status === 1) process.stderr.write('lint-openapi: the OpenAPI document has errors (above)\n');
else process.stderr.write(`lint-openapi: spectral failed to run (exit ${status})\n`);
process.exit(status === 0 ? 0 : status === 1 ? 1 : 2);
