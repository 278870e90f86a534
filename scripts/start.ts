/**
 * `npm start`: Portico with zero configuration, in one process: the resource service (on an
 * embedded PostgreSQL unless DATABASE_URL is set), demo data, and the gateway in front of it
 * over HTTPS with a self-signed certificate and the development token issuer. The hop between
 * them is mutual TLS too: a development CA in the data dir issues the service's certificate
 * and the gateway's client certificate (SERVICE_TLS_* and GATEWAY_UPSTREAM_* name other files;
 * SERVICE_PLAIN_HTTP=true, warned about, drops it). Everything it creates lives in
 * PORTICO_DATA_DIR (default .portico/) and is reused by the next start.
 * One process at a time: the data dir's lock is taken before anything in it is touched.
 *
 * This file is the start's first step and loads almost nothing on purpose: it answers `--help`
 * and starts the embedded database's thread, which starts and loads PGlite's code (no data dir
 * touched) while the second step (start-prepare.ts) checks the environment and takes the data
 * dir's lock before telling it to open. Only then are the gateway and the service loaded
 * (start-portico.ts): opening the database and loading their modules, each about a third of a
 * warm start, run side by side on two cores.
 *
 * The start script runs node with `--liftoff-only`: PGlite's WebAssembly (a 9 MB module) stays
 * on V8's baseline code. Its optimising compiler took a fifth of a warm start's CPU and made the
 * process peak near 800 MiB while it compiled, for statements at most a fifth faster; the
 * embedded database is for trying Portico, a server is for load (docs/performance.md).
 */
import { startEmbeddedDatabaseThread } from '../resource-service/db/embedded-thread.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE = 'usage: npm start';
answerHelp(`${USAGE}

Starts Portico with zero configuration, in one process: the resource service (on an embedded
PostgreSQL unless DATABASE_URL is set) with demo data, and the gateway in front of it over HTTPS,
mutual TLS between them. Prints the URLs, the trusted issuer, a demo token (when the development
issuer is trusted) and a curl line. Ctrl-C (SIGINT) or SIGTERM drains and stops it.

Environment: PORTICO_DATA_DIR (default .portico: keys, certificates, embedded database, audit
log), PORTICO_CONFIG (gateway config file), GATEWAY_PORT (8443), ADMIN_PORT (8442), ADMIN_HOST
(127.0.0.1), SERVICE_PORT (8081), DATABASE_URL, REDIS_URL, LOG_LEVEL (info); docs/configuration.md.`);
if (process.argv.length > 2) usageError('start', USAGE, `unexpected argument ${process.argv[2]}`);

// DATABASE_URL names a server, or the embedded database is wanted: read as start-prepare.ts does.
const databaseUrl = process.env['DATABASE_URL'];
const database = databaseUrl === undefined || databaseUrl === '' ? startEmbeddedDatabaseThread() : undefined;
const { runStart } = await import('./start-prepare.ts');
runStart(database);
