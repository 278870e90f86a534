/**
 * `npm run -s audit -- verify FILE`: checks the audit log's hash chain. Prints `OK` with the
 * record count and exits 0, or names the first broken record and exits 1; bad arguments exit 2.
 */
import { verifyAuditFile } from '../gateway/audit/verify-chain.ts';

const USAGE = 'usage: npm run -s audit -- verify FILE';
const [command, file, ...rest] = process.argv.slice(2);

if (command !== 'verify' || file === undefined || rest.length > 0) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
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
