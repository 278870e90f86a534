/**
 * `npm run -s audit -- verify FILE`: checks the audit log's hash chain. Prints `OK` with the
 * record count and exits 0, or names the first broken record and exits 1; bad arguments exit 2.
 */
import { verifyAuditFile } from '../gateway/audit/verify-chain.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE = 'usage: npm run -s audit -- verify FILE';
answerHelp(`${USAGE}

Checks the hash chain of an audit log (PORTICO_AUDIT_LOG, default <data dir>/audit.log): prints
"OK <n> records" and exits 0, or names the first broken record and exits 1. Bad arguments
exit 2.`);
const [command, file, ...rest] = process.argv.slice(2);

if (command !== 'verify' || file === undefined || rest.length > 0) {
  usageError(
    'audit',
    USAGE,
    command === 'verify' ? 'verify takes exactly one FILE' : 'the command is verify',
  );
}

try {
  const report = await verifyAuditFile(file);
  if (report.ok) {
    process.stdout.write(`OK ${report.records} records\n`);
  } else {
    const broken = report.firstBroken!;
    process.stdout.write(
      `BROKEN at record ${broken.line}: ${broken.reason} (${report.records} records verified before it)\n`,
    );
    process.exitCode = 1;
  }
} catch (error) {
  process.stderr.write(
    `audit: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`,
  );
  process.exitCode = 1;
}
