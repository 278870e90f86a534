/**
 * `npm start` on a data dir another local user may write (mode 0777, as a shared /srv dir or a
 * careless mkdir leaves it): refused at once with one line naming the dir and `chmod 700`,
 * before anything is written there for that user to read or replace.
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runStartToExit } from './support/portico-process.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('npm start on a data dir others may write', () => {
  it('refuses with one line naming the dir and the fix, writing nothing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'portico-modes-'));
    dirs.push(dataDir);
    chmodSync(dataDir, 0o777);
    const refused = await runStartToExit(dataDir, 60_000);
    expect(refused.code, refused.output).toBe(1);
    expect(refused.output).toContain('"code":"ERR_SECRET_NOT_PRIVATE"');
    expect(refused.output).toContain(
      `${dataDir} is writable by group or others (mode 0777); run chmod 700 ${dataDir}`,
    );
    expect(readdirSync(dataDir)).toEqual([]);
  }, 90_000);
});
