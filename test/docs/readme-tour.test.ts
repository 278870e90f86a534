/**
 * The README's API tour, run as a reader runs it: `npm start` (nothing configured, a fresh
 * data dir), the printed token exported, then each line of the tour block read from README.md
 * itself and run by bash and curl, and its output held to the line's `# →` comment. Only what
 * a reader's machine gives differently is substituted: the port (8443 here is the kernel's
 * choice), the data dir's certificate path (a temporary dir, not the repository's .portico)
 * and `<id>`, read from the Location of the tour's first answer. A README line that lies fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../support/run-command.ts';
import { startPortico, stopProcess } from '../first-run/support/portico-process.ts';
import type { RunningPortico } from '../first-run/support/portico-process.ts';
import { readTour } from './support/tour-block.ts';
import type { TourStep } from './support/tour-block.ts';
import { checkOutput, parseAnswer, valuePattern } from './support/tour-expectations.ts';
import { checkCounts } from './support/tour-counts.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const tour = readTour(join(ROOT, 'README.md'));
const dir = mkdtempSync(join(tmpdir(), 'portico-tour-'));
const dataDir = join(dir, 'data');
let portico: RunningPortico | undefined;

beforeAll(async () => {
  portico = await startPortico(dataDir);
}, 90_000);
afterAll(async () => {
  if (portico !== undefined) await stopProcess(portico.child, 'SIGINT');
  rmSync(dir, { recursive: true, force: true });
});

/** The README's text with this machine's port, certificate path and order id. */
function substitute(text: string, id: string | undefined): string {
  const { url, cacert } = portico!;
  const local = text
    .replaceAll('https://localhost:8443', url)
    .replaceAll('.portico/tls/localhost.crt', cacert);
  return id === undefined ? local : local.replaceAll('<id>', id);
}

/** One tour line in bash, after the block's opening line, in the reader's shell. */
async function run(step: TourStep, id: string | undefined): Promise<string> {
  const script = `${substitute(tour.setup, id)}\n${substitute(step.command, id)}`;
  const env = {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    TMPDIR: process.env['TMPDIR'],
    // The pasted `export TOKEN=...` line, and the data dir `npm run -s token` reads.
    TOKEN: portico!.token,
    PORTICO_DATA_DIR: dataDir,
  };
  const result = await runCommand('bash', ['-c', script], { cwd: ROOT, env, timeoutMs: 150_000 });
  if (result.code !== 0) throw new Error(`exit ${result.code}: ${step.command}\n${result.stderr}`);
  return result.stdout;
}

/** The order id as a reader finds it: in the header the first line's comment points to. */
function orderIdFrom(step: TourStep, output: string): string {
  const [, name = '', value = ''] = /([\w-]+): ([^\s,]*<id>[^\s,]*)/.exec(step.expected) ?? [];
  const found = valuePattern(value, undefined).exec(
    parseAnswer(output).headers.get(name.toLowerCase()) ?? '',
  );
  if (found?.[1] === undefined) throw new Error(`no <id> in the ${name} of:\n${output}`);
  return found[1];
}

describe('the API tour of the README', () => {
  it('is run with curl, and every line states what it prints', async () => {
    const curl = await runCommand('bash', ['-c', 'command -v curl'], { cwd: ROOT, env: process.env });
    expect(curl.code, 'curl is not installed (.ci/run installs it)').toBe(0);
    expect(tour.steps.length).toBeGreaterThan(10);
    expect(tour.steps.filter((step) => step.expected === '').map((step) => step.command)).toEqual([]);
  });

  it('prints, line by line, what its # → comments say', { timeout: 240_000 }, async () => {
    const problems: string[] = [];
    let id: string | undefined;
    const started = performance.now();
    for (const [index, step] of tour.steps.entries()) {
      const output = await run(step, id);
      id ??= orderIdFrom(step, output);
      const counted = tour.steps.slice(0, index).filter((earlier) => earlier.command.includes('"$AUTH"'));
      const found = /\|\s*uniq -c/.test(step.command)
        ? checkCounts(step, output, counted.length, performance.now() - started)
        : checkOutput(step.command, output, step.expected, id);
      problems.push(...found.map((problem) => `${step.command.split('\n')[0]}\n  → ${problem}`));
    }
    expect(problems).toEqual([]);
  });
});
