/**
 * The argument checks the profile and heap summaries share: after their options are taken out,
 * what is left must be paths that exist, and the counts positive integers. A refusal prints the
 * usage and exits 2 (scripts/cli-args.ts), never a stack trace.
 */
import { existsSync } from 'node:fs';
import { usageError } from '../scripts/cli-args.ts';

export function checkArguments(
  name: string,
  usage: string,
  paths: readonly string[],
  ...counts: (number | undefined)[]
): void {
  const option = paths.find((path) => path.startsWith('-'));
  if (option !== undefined) usageError(name, usage, `unknown option ${option}`);
  if (paths.length === 0) usageError(name, usage, 'no file named');
  if (counts.some((n) => n !== undefined && !(Number.isInteger(n) && n > 0)))
    usageError(name, usage, '--top and --requests take a positive integer');
  const missing = paths.find((path) => !existsSync(path));
  if (missing !== undefined) usageError(name, usage, `no such file or directory: ${missing}`);
}
