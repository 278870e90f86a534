/**
 * The bench's heap sampler (BENCH_HEAP_SAMPLE): preloaded into a process, two SIGUSR2 bracket
 * a window whose allocations it writes as a V8 heap profile, freed objects included, and the
 * bench reads it back as bytes per request.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openHeapWindow } from '../../measure/bench/heap-window.ts';
import { plainEntry } from '../../measure/bench/plain-entry.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the bench’s heap sampler', () => {
  it('writes what a process allocated between two signals, freed objects included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'portico-heap-sample-'));
    dirs.push(dir);
    const preload = plainEntry('measure/bench/heap-sampler.ts');
    // 1000 objects of about 1 KiB a millisecond, each dropped at once: nothing stays alive.
    const child = spawn(
      process.execPath,
      [
        '--import',
        preload,
        '-e',
        'process.stdout.write("ready\\n"); setInterval(() => { for (let i = 0; i < 1000; i++) globalThis.x = new Array(120).fill(i); }, 1)',
      ],
      { env: { ...process.env, BENCH_HEAP_SAMPLE: dir }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise((resolve) => child.stdout.once('data', resolve));
      const close = openHeapWindow(dir, child.pid!);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // Told as if the window had answered 1000 requests.
      const said = await close('a window round 1', 1000);
      const kib = Number(/^allocated ([\d.]+) KiB\/req \(sampled\)$/.exec(said)?.[1]);
      // About a second of 1 MiB a millisecond, in 1000 "requests": some hundreds of KiB each.
      expect(kib).toBeGreaterThan(100);
      expect(readdirSync(dir)).toEqual(['a-window-round-1.heapprofile']);
    } finally {
      child.kill('SIGKILL');
      rmSync(preload, { force: true });
    }
  });
});
