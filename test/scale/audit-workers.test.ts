/**
 * GATEWAY_WORKERS=2 with one audit log: each worker appends a chain of its own to the file,
 * named by its slot; a replaced worker continues its predecessor's chain, a restarted gateway
 * each worker's; `npm run -s audit -- verify FILE` checks every chain and finds them intact.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAuditFile } from '../../gateway/audit/verify-chain.ts';
import type { GatewayProcess } from '../gateway/support/gateway-process.ts';
import { onNewConnections, until, workerPids } from './support/gateway-workers.ts';
import { freshCustomer, startScaleFixture, type ScaleFixture } from './support/scale-fixture.ts';

const run = promisify(execFile);
const AUDIT_CLI = new URL('../../scripts/audit.ts', import.meta.url).pathname;
const NO_LIMITS = { policies: [] };

let fixture: ScaleFixture;
let dir: string;
beforeAll(async () => {
  fixture = await startScaleFixture();
  dir = mkdtempSync(join(tmpdir(), 'portico-audit-workers-'));
});
afterAll(async () => {
  await fixture?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function twoWorkers(auditLog: string): Promise<GatewayProcess> {
  const gateway = await fixture.gateway(NO_LIMITS, { GATEWAY_WORKERS: '2', PORTICO_AUDIT_LOG: auditLog });
  await gateway.waitForLog('gateway workers listening', 40_000);
  return gateway;
}

const requestIds = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { chain?: string; requestId?: string });

describe('GATEWAY_WORKERS=2 and one audit log', () => {
  it('one chain per worker slot, continued by a replacement and after a restart; verify checks all', async () => {
    const auditLog = join(dir, 'audit.log');
    const token = `Bearer ${await fixture.token(freshCustomer())}`;
    const first = await twoWorkers(auditLog);
    expect(await onNewConnections(first.port, token, 40)).toEqual(Array.from({ length: 40 }, () => 200));
    // Past the 5 ms batch: a worker killed now has nothing left unwritten.
    await new Promise((r) => setTimeout(r, 200));
    process.kill(workerPids(first)[0]!, 'SIGKILL');
    await until(() => first.logs.filter((line) => line['msg'] === 'gateway workers listening').length === 2);
    expect(await onNewConnections(first.port, token, 40)).toEqual(Array.from({ length: 40 }, () => 200));
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = await twoWorkers(auditLog);
    expect(await onNewConnections(second.port, token, 40)).toEqual(Array.from({ length: 40 }, () => 200));
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    const records = requestIds(auditLog);
    expect(records).toHaveLength(120);
    const byChain = {
      '1': records.filter((r) => r.chain === '1').length,
      '2': records.filter((r) => r.chain === '2').length,
    };
    // Both workers answered (and wrote), and no record is outside the two slots' chains.
    expect(byChain['1']).toBeGreaterThan(0);
    expect(byChain['2']).toBeGreaterThan(0);
    expect(byChain['1'] + byChain['2']).toBe(120);
    expect(await verifyAuditFile(auditLog)).toEqual({ ok: true, records: 120, chains: byChain });
    const { stdout } = await run(process.execPath, [AUDIT_CLI, 'verify', auditLog]);
    expect(stdout).toBe(`OK 120 records in 2 chains (1: ${byChain['1']}, 2: ${byChain['2']})\n`);
  }, 120_000); // three gateway starts of two workers each, on a shared machine
});
