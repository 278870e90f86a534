/**
 * `npm run -s apikey -- create --customer ID [--scope "a b"]` prints a new signed API key
 * (its id goes to stderr); `revoke KEY_ID` revokes one; `list` shows every key minted.
 *
 * Records and revocations go to Redis when REDIS_URL (or REDIS_CLUSTER_NODES, REDIS_SENTINELS) is set (keys under PORTICO_REDIS_PREFIX,
 * default `portico:`, as the gateway uses), else to `apikeys.jsonl` in the data dir
 * (PORTICO_DATA_DIR, default .portico), which a gateway without Redis re-reads within a second.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { API_KEY_ID_PATTERN, mintApiKey } from '../gateway/identity/api-key.ts';
import { loadApiKeySigningKeys } from '../gateway/identity/api-key-signing-keys.ts';
import {
  createFileApiKeyStore,
  createRedisApiKeyStore,
  type ApiKeyStore,
} from '../gateway/identity/api-key-store.ts';
import { SCOPES, isValidCustomerId } from '../shared/principal.ts';
import {
  createRedisConnection,
  describeTarget,
  redisKeyPrefixFromEnv,
  redisTargetFromEnv,
  waitForRedis,
  explainRedisError,
  type RedisClient,
} from '../shared/redis.ts';
import { answerHelp, parseScopes, usageError } from './cli-args.ts';
import { dataDirOf } from '../shared/data-dir.ts';

const USAGE = [
  'usage: npm run -s apikey -- create --customer ID [--scope "a b"]',
  '       npm run -s apikey -- revoke [--force] KEY_ID',
  '       npm run -s apikey -- list',
].join('\n');
const CUSTOMER_SCOPES = SCOPES.filter((scope) => scope !== 'admin');

answerHelp(`${USAGE}

Signed API keys (Authorization: ApiKey <key>).

  create     mints a key: the key goes to stdout, its id to stderr
    --customer ID    the customer the key acts for; required
    --scope "a b"    granted scopes, from: ${SCOPES.join(' ')}
                     (default: every scope but admin)
  revoke     revokes the key with this id (ak_...); gateways refuse it within a second.
             Says which store it wrote to; an id that store never minted is not revoked
             (exit 1): the gateway may read another store (REDIS_URL, the prefix)
    --force          revoke an id this store has no record of (minted with a store since lost)
  list       every key minted here: id, customer, scopes, created, revoked
  -h, --help this text

Environment: REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS with REDIS_SENTINEL_NAME (records
and revocations in Redis, under PORTICO_REDIS_PREFIX, default
portico:; TLS by rediss:// or REDIS_TLS=true and the REDIS_TLS_* files: docs/redis.md), else the file apikeys.jsonl in PORTICO_DATA_DIR (default .portico);
PORTICO_APIKEY_SIGNING_KEYS (else the data dir's signing key).`);

function usage(message: string): never {
  usageError('apikey', USAGE, message);
}

let parsed: { values: { customer?: string; scope?: string; force?: boolean }; positionals: string[] };
try {
  parsed = parseArgs({
    options: { customer: { type: 'string' }, scope: { type: 'string' }, force: { type: 'boolean' } },
    strict: true,
    allowPositionals: true,
  });
} catch (error) {
  usage((error as Error).message);
}
const [command, ...rest] = parsed.positionals;
const { customer, scope, force } = parsed.values;
if (force === true && command !== 'revoke') usage('--force goes with revoke only');

if (command === 'create') {
  if (rest.length > 0) usage('create takes no positional argument');
  if (customer === undefined) usage('create needs --customer');
  if (!isValidCustomerId(customer)) usage('--customer: not a valid customer id');
  if (scope !== undefined) {
    const checked = parseScopes(scope);
    if ('error' in checked) usage(checked.error);
  }
} else if (command === 'revoke') {
  if (rest.length !== 1 || customer !== undefined || scope !== undefined)
    usage('revoke takes exactly one KEY_ID');
  if (!API_KEY_ID_PATTERN.test(rest[0]!)) usage('KEY_ID: expected ak_ followed by 22 characters');
} else if (command === 'list') {
  if (rest.length > 0 || customer !== undefined || scope !== undefined) usage('list takes no argument');
} else {
  usage(command === undefined ? 'a command is required' : `unknown command "${command}"`);
}

const dataDir = dataDirOf(process.env);
// The gateway's own choice of Redis (REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS).
const redisTarget = redisTargetFromEnv(process.env);
let redis: RedisClient | undefined;
let store: ApiKeyStore;
if (redisTarget !== undefined) {
  redis = createRedisConnection(redisTarget, {
    keyPrefix: redisKeyPrefixFromEnv(process.env),
    commandTimeoutMs: 2000,
  });
  // Connection errors are reported once, below, not as ioredis's unhandled error events.
  let lastError: Error | undefined;
  redis.on('error', (error: Error) => (lastError = error));
  if (!(await waitForRedis(redis, 5000))) {
    redis.disconnect();
    // A TLS mismatch shows only as a reset: the reason names the likely cause and its setting.
    const reason =
      lastError === undefined ? '' : `: ${explainRedisError(lastError, redisTarget.tls !== undefined)}`;
    console.error(`apikey: Redis (${describeTarget(redisTarget)}) does not answer within 5 s${reason}`);
    process.exit(1);
  }
  store = createRedisApiKeyStore(redis);
} else {
  store = createFileApiKeyStore(dataDir);
}
const storeName = nameStore();

/** The store written to, as an operator compares it with the gateway's (no credentials). */
function nameStore(): string {
  if (redisTarget === undefined) return resolve(dataDir, 'apikeys.jsonl');
  const prefix = `prefix "${redisKeyPrefixFromEnv(process.env)}"`;
  if (redisTarget.mode !== 'single') return `${describeTarget(redisTarget)}, ${prefix}`;
  const url = new URL(redisTarget.url);
  const db = url.pathname.length > 1 ? ` db ${url.pathname.slice(1)}` : '';
  return `Redis ${url.host}${db}, ${prefix}`;
}

try {
  if (command === 'create') {
    const scopes = scope === undefined ? [...CUSTOMER_SCOPES] : scope.split(' ').filter((s) => s !== '');
    const [signingKey] = loadApiKeySigningKeys(process.env, dataDir);
    let minted: ReturnType<typeof mintApiKey>;
    try {
      minted = mintApiKey(signingKey!, { customerId: customer!, scopes });
    } catch (error) {
      usage(`--scope: ${(error as Error).message}`);
    }
    await store.add({
      id: minted.claims.id,
      customerId: minted.claims.cid,
      scopes: minted.claims.scp,
      createdAt: new Date(minted.claims.iat * 1000).toISOString(),
    });
    process.stderr.write(`apikey: created ${minted.claims.id} for customer ${minted.claims.cid}\n`);
    process.stdout.write(`${minted.key}\n`);
  } else if (command === 'revoke') {
    const id = rest[0]!;
    // An id this store never minted most likely means the wrong store (no REDIS_URL, another
    // prefix or data dir): writing it there would revoke nothing the gateway reads.
    if (force !== true && !(await store.has(id))) {
      process.stderr.write(
        `apikey: ${id} is not known to ${storeName}; not revoked. If the gateway reads another store, ` +
          'run this with its REDIS_URL, PORTICO_REDIS_PREFIX or PORTICO_DATA_DIR; ' +
          'if the key was minted with a store since lost, add --force\n',
      );
      process.exitCode = 1;
    } else {
      await store.revoke(id);
      process.stdout.write(`revoked ${id} in ${storeName}\n`);
    }
  } else {
    const records = await store.list();
    process.stdout.write('id\tcustomer\tscopes\tcreated\trevoked\n');
    for (const r of records) {
      process.stdout.write(
        `${r.id}\t${r.customerId}\t${r.scopes.join(' ')}\t${r.createdAt}\t${r.revokedAt ?? '-'}\n`,
      );
    }
  }
} catch (error) {
  process.stderr.write(`apikey: ${(error as Error).message}\n`);
  process.exitCode = 1;
} finally {
  store.close();
  redis?.disconnect();
}
