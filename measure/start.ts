/**
 * `npm run -s measure:start`: how long `npm start` takes from the command to its banner and to
 * the first answer through the gateway, cold (a fresh data dir: keys, certificates, database,
 * demo data all created) and warm (the same data dir again), with the CPU time and peak memory
 * of its process tree and the step the time went to. A bare `node -e 0` is timed beside it, so
 * the figures can be read as ratios on a busy machine. Prints; asserts nothing.
 *
 * Environment: START_RUNS (3: cold then warm on each of that many fresh data dirs).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, spread } from './bench/report.ts';
import { measureStart, type StartSample } from './start/run-once.ts';
import { answerHelp, usageError } from '../scripts/cli-args.ts';

const USAGE = 'usage: npm run -s measure:start   (START_RUNS: runs of each kind, 3)';
answerHelp(`${USAGE}

Runs \`npm start\` cold (a fresh data dir) and warm (the same data dir again), START_RUNS times
each, and prints the median [min–max] of: the command to the banner, the command to the first
200 of GET /v1/orders through the gateway, CPU seconds and peak RSS of the process tree, and the
steps of the start (from its "started" log line); beside it a bare \`node -e 0\` for ratios.
Every data dir and process it starts is removed or stopped at the end.`);
if (process.argv.length > 2) usageError('measure:start', USAGE, `unexpected argument ${process.argv[2]}`);

const ROOT = new URL('../', import.meta.url).pathname;
const RUNS = Math.max(1, Number(process.env['START_RUNS'] ?? 3));
/** The steps of the start in their order, as its `started` line names them. */
const STEPS = ['modules', 'database', 'service', 'demoData', 'gateway', 'ready'];

function bareNodeMs(): number {
  const started = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  return performance.now() - started;
}

/** The environment of a machine with nothing configured: ports from the kernel. */
function bareEnv(dataDir: string): NodeJS.ProcessEnv {
  const { PATH, HOME, TMPDIR } = process.env;
  return {
    PATH,
    HOME,
    TMPDIR,
    PORTICO_DATA_DIR: dataDir,
    GATEWAY_PORT: '0',
    ADMIN_PORT: '0',
    SERVICE_PORT: '0',
    LOG_LEVEL: 'info',
  };
}

/** Each step's own duration: its end minus the end of the step before it that ran. */
function stepDurations(sample: StartSample): Record<string, number> {
  const result: Record<string, number> = {};
  let previous = 0;
  for (const step of STEPS) {
    const at = sample.reachedMs[step];
    if (at === undefined) continue;
    result[step] = at - previous;
    previous = at;
  }
  return result;
}

function row(
  label: string,
  kinds: StartSample[][],
  figure: (s: StartSample) => number,
  digits: number,
): string {
  return [label.padEnd(30), ...kinds.map((samples) => spread(samples.map(figure), digits).padEnd(26))].join(
    '',
  );
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const bare = Array.from({ length: Math.max(5, RUNS) }, bareNodeMs);
  const cold: StartSample[] = [];
  const warm: StartSample[] = [];
  for (let run = 0; run < RUNS; run++) {
    const dataDir = mkdtempSync(join(tmpdir(), 'portico-measure-start-'));
    try {
      cold.push(await measureStart(ROOT, bareEnv(dataDir)));
      warm.push(await measureStart(ROOT, bareEnv(dataDir)));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const bareMedian = median(bare);
  const kinds = [cold, warm];
  const lines = [
    `npm start, ${RUNS} run(s) of each: median [min–max]. ${availableParallelism()} CPUs, load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after.`,
    `bare \`node -e 0\`: ${spread(bare, 0)} ms`,
    '',
    `${''.padEnd(30)}${'cold (fresh data dir)'.padEnd(26)}${'warm (same data dir)'.padEnd(26)}`,
    row('command → banner, s', kinds, (s) => s.bannerMs / 1000, 2),
    row('command → first 200, s', kinds, (s) => s.firstAnswerMs / 1000, 2),
    row('  ÷ bare node start', kinds, (s) => s.firstAnswerMs / bareMedian, 0),
    row('CPU to first 200, s', kinds, (s) => s.cpuSeconds, 2),
    row('node: peak RSS, MiB', kinds, (s) => s.peakRssMiB, 0),
    row('node: RSS at first 200, MiB', kinds, (s) => s.rssMiB, 0),
    row('npm: RSS at first 200, MiB', kinds, (s) => s.npmRssMiB, 0),
    'steps, ms each (from the "started" log line):',
    ...STEPS.map((step) => row(`  ${step}`, kinds, (s) => stepDurations(s)[step] ?? Number.NaN, 0)),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`measure:start failed: ${(error as Error).message}\n`);
  process.exit(1);
});
