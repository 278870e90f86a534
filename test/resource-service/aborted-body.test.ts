/**
 * A client that stops sending its body half way (the gateway cut, a client gone) is not a
 * database outage: the service used to log "The database is unavailable" for it (the body
 * stream's ECONNRESET read as the database's), sending operators after a healthy database.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_HEADER, signAssertion } from '../../shared/identity-assertion.ts';
import { startTestService } from '../support/service.ts';
import type { TestService } from '../support/service.ts';

const lines: Record<string, unknown>[] = [];
let service: TestService;
beforeAll(async () => {
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line));
      callback();
    },
  });
  service = await startTestService({ logger: pino({ level: 'debug' }, destination) });
});
afterAll(async () => {
  await service.close();
});

describe('a body cut off by the client', () => {
  it('is not logged as the database being unavailable', async () => {
    const principal = {
      subject: 'u',
      customerId: 'cus_aborted_body',
      scopes: ['orders:write'],
      authMethod: 'jwt' as const,
    };
    const requestId = randomUUID();
    const url = new URL(`${service.url}/v1/orders`);
    await new Promise<void>((resolve) => {
      const req = request({
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/v1/orders',
        headers: {
          'content-type': 'application/json',
          'content-length': '1000',
          'x-request-id': requestId,
          [IDENTITY_HEADER]: signAssertion(service.keys[0]!, principal, {
            method: 'POST',
            target: '/v1/orders',
            requestId,
          }),
        },
      });
      req.on('error', () => resolve());
      req.on('close', () => resolve());
      req.write('{"items": [');
      setTimeout(() => req.destroy(), 200);
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const about = lines.filter((line) => line['requestId'] === requestId);
    expect(about.map((line) => line['msg'])).not.toContain('The database is unavailable; retry shortly');
    expect(about.filter((line) => Number(line['level']) >= 40)).toEqual([]);
  });
});
