/**
 * Helpers for tests of GATEWAY_WORKERS: requests spread over the workers, the workers' pids,
 * and waiting for what the primary logs.
 */
import { execFileSync } from 'node:child_process';
import { Agent, request } from 'undici';
import { expect } from 'vitest';
import type { GatewayProcess } from '../../gateway/support/gateway-process.ts';

/** The primary's children: its workers. */
export function workerPids(gateway: GatewayProcess): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(gateway.child.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map(Number);
  } catch {
    return []; // ps exits 1 when there are none
  }
}

/** Each request on a connection of its own, so the listener's round robin reaches every worker. */
export async function onNewConnections(
  port: number,
  authorization: string,
  count: number,
  path = '/v1/orders',
): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const agent = new Agent({ connect: { rejectUnauthorized: false, servername: 'localhost' } });
      try {
        const response = await request(`https://localhost:${port}${path}`, {
          headers: { authorization },
          dispatcher: agent,
        });
        await response.body.text();
        return response.statusCode;
      } finally {
        await agent.close();
      }
    }),
  );
}

export async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(condition()).toBe(true);
}
