/**
 * A client may send its own X-Request-Id (kept for correlation, and echoed), including one that
 * another request already used. Two requests must still never be indistinguishable in the request
 * log or the audit record: each carries `requestId`, the gateway's own id, unique per request, and
 * beside it `clientRequestId`, what the client sent.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { useRecordingGateway } from '../support/harness.ts';

const auditLogPath = join(mkdtempSync(join(tmpdir(), 'portico-client-request-id-')), 'audit.log');
const running = useRecordingGateway({ auditLogPath });

async function send(path: string, requestId?: string): Promise<string> {
  const { gw } = running;
  const response = await request(`${gw.origin}${path}`, {
    dispatcher: gw.agent,
    headers: requestId === undefined ? {} : { 'x-request-id': requestId },
  });
  await response.body.dump();
  return String(response.headers['x-request-id']);
}

async function auditRecordsFor(paths: string[]): Promise<Record<string, unknown>[]> {
  for (let i = 0; i < 100; i++) {
    const records = readFileSync(auditLogPath, 'utf8')
      .split('\n')
      .filter((line) => line.endsWith('}'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((record) => paths.includes(String(record['path'])));
    if (records.length === paths.length) return records;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no audit records for ${paths.join(', ')}`);
}

describe("a client reusing another request's X-Request-Id", () => {
  it('cannot make two requests share an id in the request log or the audit record', async () => {
    const victimPaths = ['/v1/victim-order', '/v1/attacker-order'];
    // The victim's id, seen in a shared log or a support ticket, reused by another client.
    expect(await send(victimPaths[0]!, 'shared-id-1')).toBe('shared-id-1');
    expect(await send(victimPaths[1]!, 'shared-id-1')).toBe('shared-id-1');

    const records = await auditRecordsFor(victimPaths);
    const lines = running.gw.logs.filter(
      (entry) => entry['msg'] === 'request' && victimPaths.includes(String(entry['path'])),
    );
    expect(lines).toHaveLength(2);
    for (const entries of [records, lines]) {
      expect(entries.map((entry) => entry['clientRequestId'])).toEqual(['shared-id-1', 'shared-id-1']);
      const ids = entries.map((entry) => entry['requestId']);
      expect(new Set(ids).size).toBe(2);
      for (const id of ids)
        expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    // The same gateway id in the log line and the audit record of one request.
    expect(lines.map((line) => line['requestId']).sort()).toEqual(
      records.map((record) => record['requestId']).sort(),
    );
  });

  it('without an id of its own, the client gets the gateway id, and no clientRequestId is written', async () => {
    const echoed = await send('/v1/no-client-id');
    const [record] = await auditRecordsFor(['/v1/no-client-id']);
    expect(record?.['requestId']).toBe(echoed);
    expect(record).not.toHaveProperty('clientRequestId');
    const line = running.gw.logs.find(
      (entry) => entry['msg'] === 'request' && entry['path'] === '/v1/no-client-id',
    );
    expect(line?.['requestId']).toBe(echoed);
    expect(line).not.toHaveProperty('clientRequestId');
  });
});
