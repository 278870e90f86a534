/**
 * `npm run -s check -- [FILE]` and `npm run gateway -- --check [FILE]`: what `nginx -t` and
 * `deck validate` do. The config file (else PORTICO_CONFIG, else the built-in defaults) and the
 * gateway's environment are judged as a start would judge them, without starting anything: no
 * database, Redis, listener, certificate or data dir is opened or created. Every problem is
 * printed at once, one line each (`file:line: key.path: reason`, `environment: NAME ...`).
 * Exit 0 valid, 1 invalid, 2 a usage error (an unknown option, a file that cannot be read).
 */
import { accessSync, constants, writeSync } from 'node:fs';
import { ConfigError, loadConfigFile, parseConfig, type LoadedConfig } from './config/load.ts';
import { environmentProblems } from './environment.ts';

export const CHECK_USAGE = 'usage: npm run -s check -- [FILE]   (or: npm run gateway -- --check [FILE])';
const CHECK_HELP = `${CHECK_USAGE}

Checks a gateway config file (YAML or JSON; without FILE, PORTICO_CONFIG, else the built-in
defaults) and the environment the gateway would start with (GATEWAY_PORT, ADMIN_PORT, LOG_LEVEL,
GATEWAY_WORKERS, the Redis variables, the key rings...), without starting anything. Prints every
problem on one line: "file:line: key.path: reason" or "environment: NAME ...". Warnings (legal but
worth a look, such as a route without authentication) start with "warning:".

Exit status: 0 valid, 1 invalid, 2 usage error (unknown option, more than one file, a file that
cannot be read). docs/operations.md.`;

const print = (fd: 1 | 2, text: string) => writeSync(fd, `${text}\n`);

/** Runs the check for these arguments; returns the exit status. */
export function runCheck(args: readonly string[], env: NodeJS.ProcessEnv): number {
  if (args.includes('--help') || args.includes('-h')) {
    print(1, CHECK_HELP);
    return 0;
  }
  const operands = args.filter((arg) => arg !== '--');
  const option = operands.find((arg) => arg.startsWith('-'));
  if (option !== undefined) return usageError(`unknown option ${option}`);
  if (operands.length > 1) return usageError(`one file at a time, got ${operands.length}`);
  const named = operands[0];
  if (named !== undefined) {
    try {
      accessSync(named, constants.R_OK);
    } catch (error) {
      return usageError(`cannot read ${named}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  }
  const file = named ?? (env['PORTICO_CONFIG'] || undefined);

  const problems: string[] = [];
  let loaded: LoadedConfig | undefined;
  try {
    loaded = file === undefined ? parseConfig({}, { env }) : loadConfigFile(file, env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.located());
  }
  problems.push(...environmentProblems(env).map((problem) => `environment: ${problem}`));

  for (const warning of loaded?.warnings ?? []) print(2, `warning: ${warning}`);
  const subject = file ?? 'built-in defaults';
  if (problems.length === 0) {
    print(1, `${subject}: valid (config and environment)`);
    return 0;
  }
  for (const problem of problems) print(2, problem);
  print(
    2,
    `check: ${problems.length} problem${problems.length === 1 ? '' : 's'} (${subject} and the environment)`,
  );
  return 1;
}

function usageError(message: string): number {
  print(2, `check: ${message}\n${CHECK_USAGE}\n(--help for more)`);
  return 2;
}
