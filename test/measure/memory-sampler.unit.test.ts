/**
 * The bench's memory sampler (measure/bench/memory-sampler.ts): with BENCH_MEMORY_SAMPLER set,
 * every gateway gets it preloaded as plain JavaScript (a .ts preload would load the type
 * stripper into the gateway and measure it too), and it tells resident memory by mapping.
 */
import { readFileSync, rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { anonymousByKind, residentByMapping } from '../../measure/bench/memory-sampler.ts';
import { gatewayNodeArgs } from '../../measure/bench/processes.ts';

describe('the bench’s memory sampler', () => {
  it('is preloaded into the gateways as plain JavaScript when BENCH_MEMORY_SAMPLER names a directory', () => {
    const args = gatewayNodeArgs(['gateway, cache hit'], {
      BENCH_MEMORY_SAMPLER: '/tmp/x',
      BENCH_GATEWAY_NODE_ARGS: '--cpu-prof',
    });
    const preload = args[args.indexOf('--import') + 1]!;
    try {
      expect(preload).toMatch(/\/dist\/bench\/memory-sampler\.js$/);
      expect(readFileSync(preload, 'utf8')).toContain('BENCH_MEMORY_SAMPLER');
      expect(args).toContain('--cpu-prof');
      expect(gatewayNodeArgs(['gateway, cache hit'], {})).toEqual([]);
    } finally {
      rmSync(preload, { force: true });
    }
  });

  it('gives BENCH_GATEWAY_NODE_ARGS only to the gateways of the rows BENCH_ROWS chose', () => {
    // An idle gateway under --cpu-prof costs its sampler's CPU: only the measured ones get it.
    const env = { BENCH_ROWS: 'cache hit,ladder 8', BENCH_GATEWAY_NODE_ARGS: '--cpu-prof --cpu-prof-dir=/p' };
    const main = ['gateway, cache miss', 'gateway, cache hit'];
    expect(gatewayNodeArgs(main, env)).toEqual(['--cpu-prof', '--cpu-prof-dir=/p']);
    expect(gatewayNodeArgs(['ladder 8: + stage timing (default)'], env)).toEqual([
      '--cpu-prof',
      '--cpu-prof-dir=/p',
    ]);
    expect(gatewayNodeArgs(['ladder 3: + authentication'], env)).toEqual([]);
    expect(gatewayNodeArgs(['gateway, 2 replicas (miss)'], env)).toEqual([]);
    // With no BENCH_ROWS every row runs, so every gateway gets them.
    expect(
      gatewayNodeArgs(['ladder 3: + authentication'], { BENCH_GATEWAY_NODE_ARGS: '--cpu-prof' }),
    ).toEqual(['--cpu-prof']);
  });

  it('tells resident memory by mapping: files by name, [heap], anonymous', () => {
    const byMapping = residentByMapping(readFileSync('/proc/self/smaps', 'utf8'));
    const total = Object.values(byMapping).reduce((sum, value) => sum + value, 0);
    expect(byMapping['[anon]']).toBeGreaterThan(1);
    expect(Object.keys(byMapping).some((name) => name.startsWith('node'))).toBe(true);
    const rss = Number(/^VmRSS:\s*(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
    // Mappings under 0.25 MiB are left out; the rest is nearly all of it.
    expect(total).toBeGreaterThan(rss * 0.8);
  });

  it('splits anonymous memory into threads’ malloc arenas, V8’s pages and the rest, all of it', () => {
    const smaps = readFileSync('/proc/self/smaps', 'utf8');
    const kinds = anonymousByKind(smaps);
    const anonymous = residentByMapping(smaps)['[anon]']!;
    // This process's heap is in V8's pages; vitest's worker threads have arenas of their own.
    expect(kinds.v8Pages).toBeGreaterThan(1);
    expect(kinds.threadArenas).toBeGreaterThan(0);
    const sum = kinds.threadArenas + kinds.v8Pages + kinds.other;
    // Read once, so the kinds add up to the anonymous total, but for rounding.
    expect(Math.abs(sum - anonymous)).toBeLessThan(0.3);
  });
});
