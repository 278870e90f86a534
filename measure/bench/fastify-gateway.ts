/**
 * The gateway a Node team would assemble from fastify's own plugins, a field row of
 * `npm run bench`: fastify 5 over node:https (the bench's certificate, the gateway's TLS
 * policy); the bearer JWT verified with jose against the development issuer Portico's rows
 * trust (ES256, `typ` at+jwt, issuer and audience), each verified token cached until it
 * expires; @fastify/rate-limit counting per subject in Redis through ioredis (limit 10^9,
 * never refuses); @fastify/http-proxy to the static upstream (undici, keep-alive); fastify's
 * request log (pino, two lines per request) to a file. With `bare`, @fastify/http-proxy alone
 * (no authentication, limit or log): what the plugins above cost is the step between the two.
 *
 *   node measure/bench/fastify-gateway.ts '{"port": ..., "upstream": "http://...", ...}'
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { TLS_OPTIONS } from '../../shared/tls-policy.ts';
import { DEV_AUDIENCE, DEV_ISSUER } from '../../gateway/identity/dev-issuer.ts';

export interface FastifyGatewayOptions {
  port: number;
  upstream: string;
  certFile: string;
  keyFile: string;
  /** The development issuer's public keys (dev-issuer/jwks.json in the bench's data dir). */
  jwksFile: string;
  redisUrl: string;
  redisPrefix: string;
  logFile: string;
  /** fastify and @fastify/http-proxy only. */
  bare?: boolean;
}

// The part of fastify's API this peer uses. Loaded at run time, not imported: the bench's
// peer alone needs fastify, and a checkout without it still typechecks.
interface Request {
  headers: Record<string, string | string[] | undefined>;
  subject: string;
}
interface Reply {
  code(status: number): Reply;
  send(body: unknown): Reply;
}
interface App {
  decorateRequest(name: string, value: unknown): void;
  addHook(name: 'onRequest', hook: (request: Request, reply: Reply) => Promise<unknown>): void;
  register(plugin: unknown, options: object): PromiseLike<unknown>;
  listen(options: { port: number; host: string }): Promise<string>;
}
const load = createRequire(import.meta.url);
const fastify = load('fastify') as (options: object) => App;
const rateLimit = load('@fastify/rate-limit') as unknown;
const httpProxy = load('@fastify/http-proxy') as unknown;

const options = JSON.parse(process.argv[2] ?? '{}') as FastifyGatewayOptions;
/** The issuer's keys, read once when the first token is checked (the bare row never does). */
let keys: ReturnType<typeof createLocalJWKSet> | undefined;
const keySet = () =>
  (keys ??= createLocalJWKSet(JSON.parse(readFileSync(options.jwksFile, 'utf8')) as JSONWebKeySet));

/** Verified tokens: subject and expiry (ms), as a gateway would cache them. */
const verified = new Map<string, { subject: string; expiresAt: number }>();

async function subjectOf(authorization: string | string[] | undefined): Promise<string | undefined> {
  if (typeof authorization !== 'string' || !authorization.startsWith('Bearer ')) return undefined;
  const token = authorization.slice(7);
  const cached = verified.get(token);
  if (cached !== undefined && cached.expiresAt > Date.now()) return cached.subject;
  try {
    const { payload } = await jwtVerify(token, keySet(), {
      issuer: DEV_ISSUER,
      audience: DEV_AUDIENCE,
      algorithms: ['ES256'],
      typ: 'at+jwt',
    });
    if (typeof payload.sub !== 'string' || payload.exp === undefined) return undefined;
    if (verified.size >= 10_000) verified.clear();
    verified.set(token, { subject: payload.sub, expiresAt: payload.exp * 1000 });
    return payload.sub;
  } catch {
    return undefined;
  }
}

/** Authentication, then the rate limit per verified subject: what a team would add first. */
async function assemble(app: App): Promise<void> {
  app.decorateRequest('subject', '');
  // Registered before the rate limit's own hook: the limit counts per verified subject.
  app.addHook('onRequest', async (request, reply) => {
    const subject = await subjectOf(request.headers['authorization']);
    if (subject === undefined) return reply.code(401).send({ error: 'unauthorized' });
    request.subject = subject;
    return undefined;
  });
  const redis = new Redis(options.redisUrl, { connectTimeout: 500, maxRetriesPerRequest: 1 });
  await app.register(rateLimit, {
    global: true,
    max: 1_000_000_000,
    timeWindow: 60_000,
    redis,
    nameSpace: options.redisPrefix,
    keyGenerator: (request: Request) => request.subject,
  });
}

const app = fastify({
  https: { ...TLS_OPTIONS, cert: readFileSync(options.certFile), key: readFileSync(options.keyFile) },
  logger: options.bare === true ? false : { level: 'info', file: options.logFile },
});
if (options.bare !== true) await assemble(app);
await app.register(httpProxy, { upstream: options.upstream, prefix: '/v1', rewritePrefix: '/v1' });
await app.listen({ port: options.port, host: '127.0.0.1' });
process.once('SIGTERM', () => process.exit(0));
