/**
 * The bench's ports for its children come from below the kernel's ephemeral range, where no
 * outgoing connection's source port can take one between the check and the child's listen,
 * and never twice.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../measure/bench/children.ts';

const ephemeralLow = Number(
  readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
);

describe('the bench’s free ports', () => {
  it('are below the ephemeral range, distinct, and free to listen on', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 30; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralLow);
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(ports[0], '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
