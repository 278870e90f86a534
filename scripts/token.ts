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

const USAGE = 'usage: npm run -s token -- --customer ID [--scope "a b"] [--ttl SECONDS] [--admin]';
const CUSTOMER_SCOPES = SCOPES.filter((scope) => scope !== 'admin');
const MAX_TTL = 24 * 3600;

function fail(message: string): never {
  process.stderr.write(`token: ${message}\n${USAGE}\n`);
  process.exit(2);
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
const scopes =
  values.scope === undefined ? [...CUSTOMER_SCOPES] : values.scope.split(' ').filter((s) => s !== '');
if (scopes.some((scope) => !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope))) fail('--scope: invalid scope');
if (values.admin === true && !scopes.includes('admin')) scopes.push('admin');

const issuer = loadOrCreateDevIssuer(process.env['PORTICO_DATA_DIR'] ?? '.portico');
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
