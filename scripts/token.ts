/**
 * `npm run -s token -- --customer ID [--scope "a b"] [--ttl S] [--admin]`
 *
 * Prints one access token (RFC 9068 JWT) signed by the development issuer of the data dir
 * (PORTICO_DATA_DIR, default .portico): the issuer a gateway started with `npm start` on the
 * same data dir trusts. Only the token goes to stdout, so `$(npm run -s token -- ...)` works.
 */
import { parseArgs } from 'node:util';
import { loadOrCreateDevIssuer } from '../gateway/identity/dev-issuer.ts';
import { SCOPES, isValidCustomerId } from '../shared/principal.ts';
import { answerHelp, parseScopes, usageError } from './cli-args.ts';
import { dataDirOf } from '../shared/data-dir.ts';

const USAGE = 'usage: npm run -s token -- --customer ID [--scope "a b"] [--ttl SECONDS] [--admin]';
const CUSTOMER_SCOPES = SCOPES.filter((scope) => scope !== 'admin');
const MAX_TTL = 24 * 3600;

answerHelp(`${USAGE}

Prints one access token (RFC 9068 JWT) signed by the development issuer of the data dir, the
issuer a gateway started with \`npm start\` on the same data dir trusts. Only the token goes to
stdout: TOKEN=$(npm run -s token -- --customer demo-alice).

  --customer ID    the customer the token acts for (customer_id claim); required
  --scope "a b"    granted scopes, from: ${SCOPES.join(' ')}
                   (default: every scope but admin)
  --ttl SECONDS    lifetime, 1 to ${MAX_TTL} (default 3600)
  --admin          adds the admin scope
  -h, --help       this text

Environment: PORTICO_DATA_DIR (default .portico), the data dir whose issuer signs.`);

function fail(message: string): never {
  usageError('token', USAGE, message);
}

let values: { customer?: string; scope?: string; ttl?: string; admin?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      customer: { type: 'string' },
      scope: { type: 'string' },
      ttl: { type: 'string' },
      admin: { type: 'boolean' },
    },
    strict: true,
    allowPositionals: false,
  }));
} catch (error) {
  fail((error as Error).message);
}

if (values.customer === undefined) fail('--customer is required');
if (!isValidCustomerId(values.customer)) fail('--customer: not a valid customer id');
const ttl = values.ttl === undefined ? 3600 : Number(values.ttl);
if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL) fail(`--ttl: an integer from 1 to ${MAX_TTL}`);
const requested = values.scope === undefined ? { scopes: [...CUSTOMER_SCOPES] } : parseScopes(values.scope);
if ('error' in requested) fail(requested.error);
const { scopes } = requested;
if (values.admin === true && !scopes.includes('admin')) scopes.push('admin');

let issuer: ReturnType<typeof loadOrCreateDevIssuer>;
try {
  issuer = loadOrCreateDevIssuer(dataDirOf(process.env));
} catch (error) {
  // Not a usage error: one line that names the file and the fix (a key others may read or write).
  process.stderr.write(`token: ${(error as Error).message}\n`);
  process.exit(1);
}
const token = await issuer.sign(
  {
    sub: values.customer,
    client_id: 'portico-dev-cli',
    customer_id: values.customer,
    scope: scopes.join(' '),
  },
  ttl,
);
process.stdout.write(`${token}\n`);
