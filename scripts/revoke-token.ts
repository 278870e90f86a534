/**
 * `npm run -s revoke-token [-- --ttl SECONDS]` reads an opaque access token on stdin and revokes
 * it on every gateway sharing the Redis (REDIS_URL, under PORTICO_REDIS_PREFIX): each drops its
 * cached introspection answer at once, and none accepts it again whatever the identity provider
 * says. `--digest D` revokes by the token's SHA-256 digest (base64url) instead, so the token
 * itself need not be handled. The token is read from stdin, never an argument: arguments are
 * visible to every user of the machine (ps) and kept in shell history.
 */
import { hash } from 'node:crypto';
import { parseArgs } from 'node:util';
import {
  isTokenDigest,
  MIN_REVOCATION_SECONDS,
  revokeTokenDigest,
} from '../gateway/identity/introspection/revocations.ts';
import {
  createRedisConnection,
  describeTarget,
  explainRedisError,
  redisKeyPrefixFromEnv,
  redisTargetFromEnv,
  waitForRedis,
} from '../shared/redis.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE = 'usage: npm run -s revoke-token -- [--ttl SECONDS] [--digest DIGEST]   (token on stdin)';
/** auth.jwt.maxLifetimeSeconds by default: no answer the gateway accepts outlives it. */
const DEFAULT_TTL_SECONDS = 86_400;

answerHelp(`${USAGE}

Revokes an opaque access token (auth.introspection) on every gateway sharing the Redis: each
drops its cached introspection answer at once and refuses the token from then on, whatever the
identity provider answers. Revoke it at the identity provider too.

  --ttl SECONDS    how long the revocation is kept (default ${DEFAULT_TTL_SECONDS}, a day: the default
                   auth.jwt.maxLifetimeSeconds); best the token's remaining lifetime, and never
                   below ${MIN_REVOCATION_SECONDS}: a gateway that missed the message may hold an answer that long
  --digest DIGEST  the token's SHA-256 digest (base64url), instead of the token on stdin
  -h, --help       this text

Prints the digest revoked. Environment: REDIS_URL (or REDIS_CLUSTER_NODES, REDIS_SENTINELS with
REDIS_SENTINEL_NAME), PORTICO_REDIS_PREFIX (default portico:), as the gateways use.`);

function usage(message: string): never {
  usageError('revoke-token', USAGE, message);
}

let values: { ttl?: string; digest?: string };
try {
  ({ values } = parseArgs({
    options: { ttl: { type: 'string' }, digest: { type: 'string' } },
    strict: true,
  }));
} catch (error) {
  usage((error as Error).message);
}
const ttl = values.ttl === undefined ? DEFAULT_TTL_SECONDS : Number(values.ttl);
// Shorter, a gateway that missed the message could outlive the record with its cached answer.
if (!Number.isInteger(ttl) || ttl < MIN_REVOCATION_SECONDS || ttl > 31_536_000)
  usage(
    `--ttl: whole seconds, ${MIN_REVOCATION_SECONDS} to 31536000 (a gateway may hold a cached answer that long)`,
  );
if (values.digest !== undefined && !isTokenDigest(values.digest))
  usage('--digest: a SHA-256 digest in base64url (43 characters)');

const target = redisTargetFromEnv(process.env);
if (target === undefined) {
  console.error('revoke-token: needs Redis (REDIS_URL): revocations reach the gateways through it');
  process.exit(1);
}

let digest = values.digest;
if (digest === undefined) {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const token = Buffer.concat(chunks).toString('utf8').trim();
  if (token === '' || /\s/.test(token)) usage('one token on stdin');
  digest = hash('sha256', token, 'base64url');
}

const redis = createRedisConnection(target, {
  keyPrefix: redisKeyPrefixFromEnv(process.env),
  commandTimeoutMs: 2000,
});
let lastError: Error | undefined;
redis.on('error', (error: Error) => (lastError = error));
try {
  if (!(await waitForRedis(redis, 5000))) {
    const reason =
      lastError === undefined ? '' : `: ${explainRedisError(lastError, target.tls !== undefined)}`;
    console.error(`revoke-token: Redis (${describeTarget(target)}) does not answer within 5 s${reason}`);
    process.exitCode = 1;
  } else {
    await revokeTokenDigest(redis, digest, ttl);
    console.log(
      `revoked ${digest} for ${ttl} s (${describeTarget(target)}, prefix "${redisKeyPrefixFromEnv(process.env)}")`,
    );
  }
} catch (error) {
  console.error(`revoke-token: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  redis.disconnect();
}
