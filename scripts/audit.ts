/**
 * `npm run -s audit -- verify FILE`: checks the audit log's hash chains (one per writer).
 * Exit 0: every chain intact and complete. Exit 3: every chain intact, with losses the writers
 * declared (a failed write, a full queue), listed. Exit 1: a chain is broken (a record changed,
 * removed, inserted, reordered or cut), the first such record named; or the file cannot be read.
 * Bad arguments exit 2.
 */
import { verifyAuditFile, type ChainReport, type DeclaredGap } from '../gateway/audit/verify-chain.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE = 'usage: npm run -s audit -- verify FILE';
answerHelp(`${USAGE}

Checks the hash chains of an audit log (PORTICO_AUDIT_LOG, default <data dir>/audit.log), one
chain per writer (each gateway worker writes its own):
  exit 0  "OK <n> records": every chain intact, nothing missing
  exit 3  "GAPS ...": every chain intact, but the writers declared records lost (a failed
          write such as a full disk, or a full queue); each gap is listed with its size
  exit 1  "BROKEN at record <line>": a record was changed, removed, inserted, reordered or cut
Bad arguments, or a FILE that cannot be read, exit 2.`);
const [command, file, ...rest] = process.argv.slice(2);

if (command !== 'verify' || file === undefined || rest.length > 0) {
  usageError(
    'audit',
    USAGE,
    command === 'verify' ? 'verify takes exactly one FILE' : 'the command is verify',
  );
}

/** Exit code of a log whose chains are intact but declare losses. */
const EXIT_DECLARED_GAPS = 3;

const chainsText = (report: ChainReport) =>
  report.chains === undefined
    ? ''
    : ` in ${Object.keys(report.chains).length} chains (${Object.entries(report.chains)
        .map(([name, count]) => `${name === '' ? 'unnamed' : name}: ${count}`)
        .join(', ')})`;

const gapText = (gap: DeclaredGap) =>
  `  record ${gap.line}${gap.chain === undefined ? '' : ` (chain ${gap.chain})`}: ${gap.records} records lost` +
  `${gap.from === undefined ? '' : ` from ${gap.from} to ${gap.to}`} (${gap.reason})\n`;

try {
  const report = await verifyAuditFile(file);
  if (!report.ok) {
    const broken = report.firstBroken!;
    process.stdout.write(
      `BROKEN at record ${broken.line}: ${broken.reason} (${report.records} records verified before it)\n`,
    );
    process.exitCode = 1;
  } else if (report.gaps !== undefined) {
    const lost = report.gaps.reduce((sum, gap) => sum + gap.records, 0);
    process.stdout.write(
      `GAPS ${report.records} records intact${chainsText(report)}; ${lost} records declared lost in ${report.gaps.length} gaps:\n${report.gaps.map(gapText).join('')}`,
    );
    process.exitCode = EXIT_DECLARED_GAPS;
  } else {
    process.stdout.write(`OK ${report.records} records${chainsText(report)}\n`);
  }
} catch (error) {
  // An input error, like a bad argument: not a verdict on the log, which exit 1 is.
  process.stderr.write(
    `audit: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`,
  );
  process.exitCode = 2;
}
