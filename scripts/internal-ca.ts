/**
 * Issues the certificates of the internal hop (gateway → resource service, mutual TLS) into a
 * directory, for deployments and for CA rotations (docs/operations.md, "Rotating the internal CA"):
 *
 *   node scripts/internal-ca.ts --out DIR [--name service]... [--ca CA_DIR]
 *
 * Writes DIR/ca.crt and DIR/ca.key (a new CA, unless --ca names a directory holding them),
 * DIR/service.crt|key (server certificate for each --name, plus localhost, 127.0.0.1, ::1) and
 * DIR/gateway.crt|key (the gateway's client certificate). A DIR that already holds a service
 * certificate is left alone, so a container that runs this at every start keeps its set.
 * Uses the development dependency `selfsigned`: run it from a full install, not the
 * production image.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createCertificateAuthority, issueCertificate } from '../shared/dev-pki.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE = 'usage: node scripts/internal-ca.ts --out DIR [--name service]... [--ca CA_DIR]';
answerHelp(`${USAGE}

Issues the certificates of the internal hop (gateway → resource service, mutual TLS) into DIR:
ca.crt and ca.key (a new CA, unless --ca names a directory holding them), service.crt|key (for
each --name, plus localhost, 127.0.0.1, ::1) and gateway.crt|key (the gateway's client
certificate). A DIR already holding service.crt is left alone.

  --out DIR        where the files go; required
  --name NAME      a DNS name of the service certificate (repeatable)
  --ca CA_DIR      sign with the CA in CA_DIR (ca.crt, ca.key) instead of a new one
  -h, --help       this text`);

let values: { out?: string; name: string[]; ca?: string };
try {
  ({ values } = parseArgs({
    options: {
      out: { type: 'string' },
      name: { type: 'string', multiple: true, default: [] },
      ca: { type: 'string' },
    },
  }));
} catch (error) {
  usageError('internal-ca', USAGE, (error as Error).message);
}
const out = values.out;
if (out === undefined) usageError('internal-ca', USAGE, '--out is required');

/** Whole files only: written beside, then renamed over. */
function put(name: string, text: string, mode: number): void {
  const file = join(out!, name);
  writeFileSync(`${file}.tmp`, text, { mode });
  renameSync(`${file}.tmp`, file);
}

async function main(dir: string): Promise<void> {
  if (existsSync(join(dir, 'service.crt'))) {
    process.stdout.write(`${dir} already holds a certificate set; nothing issued\n`);
    return;
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca =
    values.ca === undefined
      ? await createCertificateAuthority({ commonName: 'Portico internal CA' })
      : {
          cert: readFileSync(join(values.ca, 'ca.crt'), 'utf8'),
          key: readFileSync(join(values.ca, 'ca.key'), 'utf8'),
        };
  const dnsNames = [...values.name, 'localhost'];
  const service = await issueCertificate(ca, {
    commonName: 'portico-resource-service',
    usage: 'server',
    dnsNames,
  });
  const gateway = await issueCertificate(ca, { commonName: 'portico-gateway', usage: 'client' });
  put('ca.crt', ca.cert, 0o644);
  if (values.ca === undefined) put('ca.key', ca.key, 0o600);
  put('gateway.key', gateway.key, 0o600);
  put('gateway.crt', gateway.cert, 0o644);
  put('service.key', service.key, 0o600);
  put('service.crt', service.cert, 0o644);
  process.stdout.write(`issued ca.crt, service.crt (${dnsNames.join(', ')}), gateway.crt in ${dir}\n`);
}

await main(out);
