/**
 * An example generator of the Secrets deploy/kubernetes expects, created outside the manifests
 * so that no key sits in a file under version control (docs/deployment.md):
 *
 *   node scripts/kubernetes-secrets.ts --out DIR --database-url URL --redis-url URL
 *     [--namespace portico] [--host api.example.com]... [--tls-cert FILE --tls-key FILE]
 *
 * Writes one YAML file per Secret into DIR, each Secret for one component only:
 *   portico-gateway                PORTICO_ASSERTION_KEYS, PORTICO_APIKEY_SIGNING_KEYS,
 *                                  PORTICO_ADMIN_TOKEN, REDIS_URL
 *   portico-service                PORTICO_ASSERTION_KEYS (the same ring), DATABASE_URL
 *   portico-gateway-tls            the edge certificate (kubernetes.io/tls): the given files, or
 *                                  one from a new CA for each --host (a trial only)
 *   portico-gateway-internal-tls   ca.crt, gateway.crt|key: the gateway's side of the mutual TLS
 *   portico-service-internal-tls   ca.crt, service.crt|key: the service's side
 *   portico-gateway-jwks           jwks.json: the public keys of this deployment's own issuer
 * and keeps what must not go into the cluster beside them: DIR/issuer (the issuer's private
 * key: `PORTICO_DATA_DIR=DIR/issuer npm run -s token -- --customer ID` mints a token every
 * gateway accepts), DIR/internal-ca (the CA key, for renewals) and, for a trial edge
 * certificate, DIR/edge-ca.crt (the CA clients trust). Uses the development
 * dependency `selfsigned`: run it from a full install. A DIR that exists is refused.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { loadOrCreateDevIssuer } from '../gateway/identity/dev-issuer.ts';
import { createCertificateAuthority, issueCertificate } from '../shared/dev-pki.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE =
  'usage: node scripts/kubernetes-secrets.ts --out DIR --database-url URL --redis-url URL [--namespace NS] [--host NAME]... [--tls-cert FILE --tls-key FILE]';
answerHelp(`${USAGE}

Writes the Secrets of deploy/kubernetes into DIR (one YAML file each; kubectl apply -f DIR),
with new random keys, and keeps the issuer's private key (DIR/issuer) and the internal CA's key
(DIR/internal-ca) out of them. See docs/deployment.md.`);

const { values } = (() => {
  try {
    return parseArgs({
      options: {
        out: { type: 'string' },
        'database-url': { type: 'string' },
        'redis-url': { type: 'string' },
        namespace: { type: 'string', default: 'portico' },
        host: { type: 'string', multiple: true, default: [] },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    return usageError('kubernetes-secrets', USAGE, (error as Error).message);
  }
})();
const required = (name: 'out' | 'database-url' | 'redis-url'): string =>
  values[name] ?? usageError('kubernetes-secrets', USAGE, `--${name} is required`);
if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined))
  usageError('kubernetes-secrets', USAGE, '--tls-cert and --tls-key go together');

/** `kid:base64(32 random bytes)`: the key-ring format of PORTICO_*_KEYS. */
const keyRing = (prefix: string) =>
  `${prefix}-${randomBytes(4).toString('hex')}:${randomBytes(32).toString('base64')}`;

function secret(name: string, stringData: Record<string, string>, type = 'Opaque'): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: values.namespace },
    type,
    stringData,
  });
}

/** The given edge certificate, or a trial one whose CA goes to DIR/edge-ca.crt for clients. */
async function edgeCertificate(out: string): Promise<{ cert: string; key: string }> {
  if (values['tls-cert'] !== undefined)
    return { cert: readFileSync(values['tls-cert'], 'utf8'), key: readFileSync(values['tls-key']!, 'utf8') };
  const ca = await createCertificateAuthority({ commonName: 'Portico trial edge CA', validDays: 90 });
  const pair = await issueCertificate(ca, {
    commonName: 'portico-gateway',
    usage: 'server',
    dnsNames: values.host,
    validDays: 90,
  });
  writeFileSync(join(out, 'edge-ca.crt'), ca.cert);
  return { cert: pair.cert + ca.cert, key: pair.key };
}

async function main(out: string): Promise<void> {
  if (existsSync(out)) usageError('kubernetes-secrets', USAGE, `${out} exists: choose a new directory`);
  mkdirSync(join(out, 'internal-ca'), { recursive: true, mode: 0o700 });
  const write = (file: string, text: string) => writeFileSync(join(out, file), text, { mode: 0o600 });
  const assertionKeys = keyRing('a');
  write(
    'portico-gateway.yaml',
    secret('portico-gateway', {
      PORTICO_ASSERTION_KEYS: assertionKeys,
      PORTICO_APIKEY_SIGNING_KEYS: keyRing('k'),
      PORTICO_ADMIN_TOKEN: randomBytes(32).toString('base64url'),
      REDIS_URL: required('redis-url'),
    }),
  );
  write(
    'portico-service.yaml',
    secret('portico-service', {
      PORTICO_ASSERTION_KEYS: assertionKeys,
      DATABASE_URL: required('database-url'),
    }),
  );
  const edge = await edgeCertificate(out);
  write(
    'portico-gateway-tls.yaml',
    secret('portico-gateway-tls', { 'tls.crt': edge.cert, 'tls.key': edge.key }, 'kubernetes.io/tls'),
  );

  const ca = await createCertificateAuthority({ commonName: 'Portico internal CA' });
  writeFileSync(join(out, 'internal-ca', 'ca.crt'), ca.cert);
  writeFileSync(join(out, 'internal-ca', 'ca.key'), ca.key, { mode: 0o600 });
  // The name the gateways dial: the `service` Service of the namespace.
  const service = await issueCertificate(ca, {
    commonName: 'portico-resource-service',
    usage: 'server',
    dnsNames: ['service', `service.${values.namespace}.svc`],
  });
  const gateway = await issueCertificate(ca, { commonName: 'portico-gateway', usage: 'client' });
  write(
    'portico-gateway-internal-tls.yaml',
    secret('portico-gateway-internal-tls', {
      'ca.crt': ca.cert,
      'gateway.crt': gateway.cert,
      'gateway.key': gateway.key,
    }),
  );
  write(
    'portico-service-internal-tls.yaml',
    secret('portico-service-internal-tls', {
      'ca.crt': ca.cert,
      'service.crt': service.cert,
      'service.key': service.key,
    }),
  );

  // The deployment's own issuer: the development issuer's key format, one key pair for every replica.
  const issuer = loadOrCreateDevIssuer(join(out, 'issuer'));
  write(
    'portico-gateway-jwks.yaml',
    secret('portico-gateway-jwks', { 'jwks.json': JSON.stringify(issuer.jwks) }),
  );
  process.stdout.write(`wrote the Secrets of deploy/kubernetes to ${out} (kubectl apply -f ${out})\n`);
}

await main(required('out'));
