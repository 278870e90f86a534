/**
 * A ConfigMap edit reaches a running gateway within seconds. The kubelet never writes the
 * mounted file: it writes a new timestamped directory, points `..data_tmp` at it, renames
 * `..data_tmp` over `..data` (one atomic swap) and removes the old directory, while
 * `portico.yaml` stays a link to `..data/portico.yaml`. This test does the same dance on a
 * real directory and waits for the watcher to apply the new limits.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../gateway/config/load.ts';
import type { GatewayConfig } from '../../gateway/config/schema/gateway.ts';
import { watchConfigFile } from '../../gateway/config/reload.ts';

const dir = mkdtempSync(join(tmpdir(), 'portico-configmap-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const configWithLimit = (limit: number) =>
  [
    'rateLimits:',
    '  policies:',
    `    - { name: default, key: principal, limit: ${limit}, window: 60s }`,
    '',
  ].join('\n');

/** Watches `file` as the gateway does, keeping every config it applies. */
function watchCollecting(file: string) {
  const applied: GatewayConfig[] = [];
  const log = pino({ level: 'silent' }, new Writable({ write: (_c, _e, callback) => callback() }));
  const reloader = watchConfigFile(
    file,
    {},
    { log, running: loadConfigFile(file, {}).config, apply: (c) => void applied.push(c) },
  );
  return { applied, reloader };
}

/** The kubelet's atomic writer: a new timestamped dir, then `..data` swapped to it. */
function kubeletWrite(volume: string, text: string, stamp: string): string {
  const generation = `..2026_11_26_18_00_${stamp}.000000001`;
  mkdirSync(join(volume, generation));
  writeFileSync(join(volume, generation, 'portico.yaml'), text);
  symlinkSync(generation, join(volume, '..data_tmp'));
  renameSync(join(volume, '..data_tmp'), join(volume, '..data'));
  return generation;
}

describe('a ConfigMap volume', () => {
  it("applies new rate limits after the kubelet's ..data swap", async () => {
    const volume = join(dir, 'config');
    mkdirSync(volume);
    const first = kubeletWrite(volume, configWithLimit(600), '00');
    symlinkSync('..data/portico.yaml', join(volume, 'portico.yaml'));
    const file = join(volume, 'portico.yaml');
    const { applied, reloader } = watchCollecting(file);
    try {
      kubeletWrite(volume, configWithLimit(5), '01');
      rmSync(join(volume, first), { recursive: true });
      // The kubelet's own sync takes up to a minute; once it swaps, the gateway follows within seconds.
      const deadline = Date.now() + 5000;
      while (applied.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(applied.map((c) => c.rateLimits.policies[0]!.limit)).toEqual([5]);
    } finally {
      reloader.close();
    }
  });
});

describe('a config file linked from another folder', () => {
  it('applies an edit of the file the link points to', async () => {
    // /etc/portico/portico.yaml → /srv/configs/portico.yaml: an operator edits the target.
    const linkDir = join(dir, 'etc-portico');
    const targetDir = join(dir, 'srv-configs');
    mkdirSync(linkDir);
    mkdirSync(targetDir);
    const target = join(targetDir, 'portico.yaml');
    writeFileSync(target, configWithLimit(600));
    const file = join(linkDir, 'portico.yaml');
    symlinkSync(target, file);
    const { applied, reloader } = watchCollecting(file);
    try {
      // An editor's save: a new file renamed over the old one, in the target's folder.
      writeFileSync(join(targetDir, '.portico.yaml.swp'), configWithLimit(5));
      renameSync(join(targetDir, '.portico.yaml.swp'), target);
      const deadline = Date.now() + 5000;
      while (applied.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(applied.map((c) => c.rateLimits.policies[0]!.limit)).toEqual([5]);

      // The link pointed at a file in a third folder: that folder's edits count from then on.
      const thirdDir = join(dir, 'opt-configs');
      mkdirSync(thirdDir);
      writeFileSync(join(thirdDir, 'portico.yaml'), configWithLimit(7));
      symlinkSync(join(thirdDir, 'portico.yaml'), join(linkDir, '.portico.yaml.new'));
      renameSync(join(linkDir, '.portico.yaml.new'), file);
      await until(() => applied.length === 2);
      writeFileSync(join(thirdDir, 'portico.yaml'), configWithLimit(8));
      await until(() => applied.length === 3);
      expect(applied.map((c) => c.rateLimits.policies[0]!.limit)).toEqual([5, 7, 8]);
    } finally {
      reloader.close();
    }
  });
});

async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}
