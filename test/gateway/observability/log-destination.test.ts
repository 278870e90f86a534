/**
 * The log destination both processes write through (shared/log-destination.ts), on real pipes
 * in a child process: a reader gone or a reader that stopped reading costs log lines, never
 * the process. Each case runs a small script whose stdout is the pipe, and reports on stderr.
 */
import { spawn } from 'node:child_process';
import { expect, it } from 'vitest';

const DESTINATION = new URL('../../../shared/log-destination.ts', import.meta.url).pathname;

/** Runs `body` in a child whose stdout the test treats as `reader` says; its stderr and exit. */
function run(
  body: string,
  reader: 'closed' | 'stopped',
): Promise<{ code: number | null; stderr: string; ms: number }> {
  const script = `import { createLogDestination } from ${JSON.stringify(DESTINATION)};\n${body}`;
  const start = Date.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  if (reader === 'closed') child.stdout.destroy();
  else child.stdout.pause();
  const killer = setTimeout(() => child.kill('SIGKILL'), 8000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(killer);
      child.stdout.destroy();
      resolve({ code, stderr, ms: Date.now() - start });
    }),
  );
}

const LINE = JSON.stringify({ msg: 'x'.repeat(200) }) + '\n';

it('a reader that stopped reading: writes drop lines instead of blocking, the exit flush returns', async () => {
  const result = await run(
    `const d = createLogDestination(1, { minLength: 4096 });
     for (let i = 0; i < 20000; i++) d.write(${JSON.stringify(LINE)});
     process.once('exit', () => { d.flushSync(); process.stderr.write('dropped ' + d.dropped + '\\n'); });
     process.exit(0);`,
    'stopped',
  );
  expect(result.code).toBe(0);
  // 4 MB written against a pipe of about 64 KiB: most of it was dropped, and said so.
  expect(Number(/dropped (\d+)/.exec(result.stderr)?.[1])).toBeGreaterThan(1_000_000);
});

it('a reader gone: the first EPIPE ends the writing, the exit flush returns', async () => {
  const result = await run(
    `const d = createLogDestination(1, { minLength: 4096 });
     setTimeout(() => {
       for (let i = 0; i < 100; i++) d.write(${JSON.stringify(LINE)});
       process.once('exit', () => { d.flushSync(); process.stderr.write('dropped ' + d.dropped + '\\n'); });
       process.exit(0);
     }, 300);`,
    'closed',
  );
  expect(result.code).toBe(0);
  expect(Number(/dropped (\d+)/.exec(result.stderr)?.[1])).toBeGreaterThan(0);
});
