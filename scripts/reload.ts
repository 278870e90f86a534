/**
 * `npm run -s reload`: asks the gateway on this machine to reload its config file now (its
 * admin listener's `POST /config/reload`, with the admin token) and says what happened.
 * Exit 0 applied or unchanged, 1 refused (the running config stays) or not done, 2 usage.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_ADMIN_PORT } from '../gateway/environment.ts';
import { answerHelp, usageError } from './cli-args.ts';
import { dataDirOf } from '../shared/data-dir.ts';

const USAGE = 'usage: npm run -s reload';
answerHelp(`${USAGE}

Reloads the running gateway's config file (PORTICO_CONFIG) now, as SIGHUP does, through its admin
listener (ADMIN_HOST, ADMIN_PORT: ${DEFAULT_ADMIN_PORT}) with the admin token (PORTICO_ADMIN_TOKEN, else
the data dir's admin-token), and prints the result: what was applied (routes, upstreams, auth,
CORS, limits... run on a new pipeline; requests in flight finish on the old one), the keys that
need a restart (listener, admin, cache, tracing.otlp), or every problem of a refused file or of
a pipeline that could not be built. The file's version (a digest) and the last result are also on
/metrics (portico_config_info, portico_config_last_reload_success). Under GATEWAY_WORKERS every
worker reloads, and each one's result follows on a line of its own.

Exit status: 0 applied or unchanged, 1 refused (by any worker), incomplete (a worker did not answer)
or not done (no gateway, no config file), 2 usage.`);
if (process.argv.length > 2) usageError('reload', USAGE, `unexpected argument ${process.argv[2]}`);

/**
 * The gateway's answer (gateway/config/reload-summary.ts), as far as this prints it: one process's
 * result, or with `workers`, every worker's.
 */
interface Result {
  outcome: string;
  message?: string;
  problems?: string[];
  workers?: { worker: number; pid: number; message: string }[];
}

const env = process.env;
const host =
  !env['ADMIN_HOST'] || ['0.0.0.0', '::'].includes(env['ADMIN_HOST']) ? '127.0.0.1' : env['ADMIN_HOST'];
const port = env['ADMIN_PORT'] || String(DEFAULT_ADMIN_PORT);
const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/config/reload`;

function adminToken(): string | undefined {
  const fromEnv = env['PORTICO_ADMIN_TOKEN']?.trim();
  if (fromEnv) return fromEnv;
  try {
    return readFileSync(join(dataDirOf(env), 'admin-token'), 'utf8').trim();
  } catch {
    return undefined;
  }
}

function fail(message: string): never {
  process.stderr.write(`reload: ${message}\n`);
  process.exit(1);
}

const token =
  adminToken() ?? fail("no admin token: set PORTICO_ADMIN_TOKEN (or PORTICO_DATA_DIR to the gateway's)");
let response: Response;
try {
  response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{}',
    signal: AbortSignal.timeout(10_000),
  });
} catch (error) {
  const cause = (error as Error).cause as Error | undefined;
  fail(`no gateway answered at ${url}: ${cause?.message ?? (error as Error).message}`);
}
const result = (await response.json().catch(() => ({ outcome: `HTTP ${response.status}` }))) as Result;
/** Each worker's own result under GATEWAY_WORKERS, one line each, under the summary. */
const perWorker = (result.workers ?? [])
  .map((worker) => `  worker ${worker.worker} (pid ${worker.pid}): ${worker.message}\n`)
  .join('');
if (result.outcome === 'applied' || result.outcome === 'unchanged') {
  process.stdout.write(`${result.message}\n${perWorker}`);
} else if (result.outcome === 'refused' || result.outcome === 'incomplete') {
  const problems = (result.problems ?? []).map((p) => `  ${p}\n`).join('');
  process.stderr.write(`${result.message}\n${problems}${perWorker}`);
  process.exitCode = 1;
} else {
  const detail =
    (result as { detail?: string; problems?: string[] }).detail ?? result.problems?.join('; ') ?? '';
  fail(`not done (HTTP ${response.status}${detail ? `: ${detail}` : ''})`);
}
