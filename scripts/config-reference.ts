/**
 * Regenerates the reference table in docs/gateway-config.md from the config schemas, and the
 * environment table in docs/configuration.md from shared/environment-variables.ts
 * (`npm run docs:config`). Tests fail when a committed table and its source disagree.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { configReference } from '../gateway/config/load.ts';
import { environmentTable } from '../shared/environment-variables.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE = 'usage: npm run -s docs:config';
answerHelp(`${USAGE}

Writes the config reference table of docs/gateway-config.md (between its reference markers) from
the schemas that validate the gateway's config, and the environment table of docs/configuration.md
from the code's list of variables (shared/environment-variables.ts), then formats both files. Run
it after changing a schema or a variable; a test fails while a table and its source disagree.`);
if (process.argv.length > 2) usageError('docs:config', USAGE, `unexpected argument ${process.argv[2]}`);

/**
 * Replaces what sits between `<!-- name:start -->` and `<!-- name:end -->` in a doc with
 * `table`, and formats the file. Formatted here, not by a second command in package.json: npm
 * appends a script's arguments to its last command, so `npm run docs:config -- --help` reached
 * prettier, after this had written.
 */
async function writeBetweenMarkers(doc: string, name: string, table: string): Promise<void> {
  const file = fileURLToPath(new URL(`../docs/${doc}`, import.meta.url));
  const [startMarker, endMarker] = [`<!-- ${name}:start -->`, `<!-- ${name}:end -->`];
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(startMarker);
  const end = text.indexOf(endMarker);
  if (start === -1 || end === -1)
    throw new Error(`docs/${doc} lacks the ${startMarker} / ${endMarker} markers`);
  const written = `${text.slice(0, start + startMarker.length)}\n${table}\n${text.slice(end)}`;
  const options = await resolveConfig(file);
  writeFileSync(file, await format(written, { ...options, filepath: file }));
}

await writeBetweenMarkers('gateway-config.md', 'reference', configReference());
await writeBetweenMarkers('configuration.md', 'environment', environmentTable());
