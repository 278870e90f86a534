/**
 * `npm run -s api:compat -- BASE.json NEW.json`: the compatibility gate. Names every breaking
 * change from BASE to NEW (scripts/api-compat/breaking-changes.ts) and exits 1, or says there
 * is none and exits 0; unreadable input exits 2. `--live` as NEW compares with the document
 * the resource service serves, built in-process from the same code.
 *
 * Our own, small: the maintained npm diff tools are for OpenAPI 3.0 (openapi-diff, api-smart-diff
 * by its README) or wrap a native binary fetched at install time (@pb33f/openapi-changes);
 * api-smart-diff 1.0.6 on this 3.1 document called a widened type (integer → [integer, null])
 * and a response enum value added breaking.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { breakingChanges } from './api-compat/breaking-changes.ts';
import type { Json } from './api-compat/schema-compat.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE = [
  'usage: npm run -s api:compat -- BASE.json NEW.json|--live',
  '       npm run -s api:compat -- --write-baseline docs/openapi-v1.baseline.json',
].join('\n');
answerHelp(`${USAGE}

Compares two OpenAPI 3.x documents of one API version and names every change that breaks an
existing client: a removed path, operation or query parameter (this API refuses unknown ones);
a new required parameter, request field or
request body; a request schema that accepts less (narrowed type, enum, bounds, pattern); a
removed success response, media type, response field or enum value; a response field whose
type changed or that is no longer always present. Additions are not breaking.

  BASE.json    the published document (docs/openapi-v1.baseline.json for /v1)
  NEW.json     the candidate; --live: the document the resource service serves now
  --write-baseline FILE
               writes the live document to FILE (formatted as the repository's files are):
               how the committed baseline is made, once a release has published the API
  -h, --help   this text

Exit status: 0 no breaking change, 1 breaking changes (each on its own line), 2 bad input.`);

const args = process.argv.slice(2);
if (args[0] === '--write-baseline') {
  if (args.length !== 2) usageError('api:compat', USAGE, '--write-baseline takes one FILE');
  await writeBaseline(args[1]!);
  process.exit(0);
}
const unknown = args.find((arg) => arg.startsWith('-') && arg !== '--live');
if (unknown !== undefined) usageError('api:compat', USAGE, `unknown option ${unknown}`);
if (args.length !== 2) usageError('api:compat', USAGE, 'two documents are needed');
const [basePath, nextPath] = args as [string, string];

async function load(path: string): Promise<Json> {
  if (path === '--live') {
    const { buildOpenApiDocument } = await import('../resource-service/api-docs/document.ts');
    return JSON.parse(JSON.stringify(buildOpenApiDocument())) as Json;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    usageError('api:compat', USAGE, `cannot read ${path}: ${(error as Error).message}`);
  }
  const version = (parsed as { openapi?: unknown } | null)?.openapi;
  if (typeof version !== 'string' || !version.startsWith('3.'))
    usageError('api:compat', USAGE, `${path} is not an OpenAPI 3.x document`);
  return parsed as Json;
}

async function writeBaseline(file: string): Promise<void> {
  // prettier is a development dependency, as this command is a development step.
  const prettier = await import('prettier');
  const options = await prettier.resolveConfig(file);
  const text = await prettier.format(JSON.stringify(await load('--live')), { ...options, filepath: file });
  writeFileSync(file, text);
  process.stdout.write(`api:compat: wrote the live document to ${file}\n`);
}

const changes = breakingChanges(await load(basePath), await load(nextPath));
if (changes.length === 0) {
  process.stdout.write(`api:compat: no breaking change from ${basePath} to ${nextPath}\n`);
} else {
  for (const change of changes) process.stdout.write(`breaking: ${change.where}: ${change.what}\n`);
  process.stdout.write(`api:compat: ${changes.length} breaking change${changes.length === 1 ? '' : 's'}\n`);
  process.exitCode = 1;
}
