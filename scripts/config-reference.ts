/**
 * Regenerates the reference table in docs/gateway-config.md from the config schemas
 * (`npm run docs:config`). A test fails when the committed table and the schemas disagree.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { configReference } from '../gateway/config/load.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE = 'usage: npm run -s docs:config';
answerHelp(`${USAGE}

Writes the config reference table of docs/gateway-config.md (between its reference markers) from
the schemas that validate the gateway's config, then formats the file. Run it after changing a
schema; a test fails while the table and the schemas disagree.`);
if (process.argv.length > 2) usageError('docs:config', USAGE, `unexpected argument ${process.argv[2]}`);

const file = new URL('../docs/gateway-config.md', import.meta.url);
const START = '<!-- reference:start -->';
const END = '<!-- reference:end -->';
const text = readFileSync(file, 'utf8');
const start = text.indexOf(START);
const end = text.indexOf(END);
if (start === -1 || end === -1) throw new Error(`docs/gateway-config.md lacks the ${START} / ${END} markers`);
const written = `${text.slice(0, start + START.length)}\n${configReference()}\n${text.slice(end)}`;
// Formatted here, not by a second command in package.json: npm appends a script's arguments to
// its last command, so `npm run docs:config -- --help` reached prettier, after this had written.
const options = await resolveConfig(fileURLToPath(file));
writeFileSync(file, await format(written, { ...options, filepath: fileURLToPath(file) }));
