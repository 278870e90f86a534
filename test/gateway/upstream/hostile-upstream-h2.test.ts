/**
 * Hostile upstream, HTTP/2 client: every case of support/hostile-cases.ts through a node:http2
 * client, behind an uncached and a cached route. HTTP/2 has no connection to cut per request:
 * an answer broken after its head must end in RST_STREAM INTERNAL_ERROR, which a client (curl
 * included) reports as a failure, never END_STREAM or RST_STREAM NO_ERROR, which it takes for
 * a whole answer. After each case a good request is served on the same connection (the other
 * streams are unaffected) and on a new one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSession, h2Session } from '../support/h2-client.ts';
import { askH2 } from '../support/h2-outcome.ts';
import { startTestGateway, type TestGateway } from '../support/harness.ts';
import { BODIES, CASES, startHostileSetup } from '../support/hostile-cases.ts';
import type { HostileUpstream } from '../support/hostile-upstream.ts';

let upstream: HostileUpstream;
let gw: TestGateway;
beforeAll(async () => {
  ({ upstream, gw } = await startHostileSetup());
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe.each(['plain', 'cached'])('HTTP/2 client, behind the %s route', (route) => {
  it.each(CASES)('%s', async (name, _answer, expected) => {
    const session = await h2Session(gw.port, gw.certificate.cert);
    try {
      const path = `/${route}/${name}`;
      const answer = await askH2(session, path);
      expect(answer.outcome, `${answer.status} ${answer.body.slice(0, 200)}`).toBe(expected);
      if (typeof expected === 'number' && expected >= 500) {
        expect(answer.headers['content-type']).toBe('application/problem+json');
        expect(JSON.parse(answer.body)).toMatchObject({ status: expected });
      }
      if (expected === 200) expect(answer.body).toBe(BODIES[name]);
      expect(answer.body).not.toContain('SMUGG');
      if (route === 'cached') {
        // `stored` only for an answer in the store as its head went out (RFC 9211): never for
        // a cut one, nor for a body that was still streaming.
        if (expected === 'cut' || name === 'chunked-slow-cacheable')
          expect(String(answer.headers['cache-status'] ?? '')).not.toMatch(/stored/);
        if (name === 'chunked-slow-cacheable') {
          // Whole once it ended: stored then, and served from the store.
          const again = await askH2(session, path);
          expect(again.outcome).toBe(200);
          expect(String(again.headers['cache-status'])).toMatch(/; hit/);
        }
      }
      if (route === 'cached' && expected !== 200 && expected !== 204) {
        // Nothing of a failed answer was stored, nor claimed stored.
        expect(String(answer.headers['cache-status'] ?? '')).not.toMatch(/stored/);
        const before = upstream.hits.get(name) ?? 0;
        const again = await askH2(session, path);
        expect(again.outcome).toBe(expected);
        expect(upstream.hits.get(name)).toBeGreaterThan(before);
      }
      // The connection still serves: the case's stream ended alone.
      const same = await askH2(session, `/${route}/ok?after=${name}&on=same`);
      expect(same.outcome).toBe(200);
      expect(same.body).toBe('{"ok":true}');
    } finally {
      await closeSession(session);
    }
    const fresh = await h2Session(gw.port, gw.certificate.cert);
    try {
      const after = await askH2(fresh, `/${route}/ok?after=${name}&on=new`);
      expect(after.outcome).toBe(200);
    } finally {
      await closeSession(fresh);
    }
  });
});

it('answers every case at once on one HTTP/2 connection and goes on serving', async () => {
  // A gateway of its own, with time limits that hold for ~50 upstream connections opened at
  // once on a loaded machine (400 ms did not, on the old code as on the new).
  const busy = await startTestGateway(upstream.url, {
    routes: [{ prefix: '/plain', upstream: upstream.url, auth: 'none' }],
    proxy: { responseTimeoutMs: 2000, bodyTimeoutMs: 2000 },
  });
  const session = await h2Session(busy.port, busy.certificate.cert);
  try {
    const answers = await Promise.all(CASES.map(([name]) => askH2(session, `/plain/${name}?all`)));
    expect(answers.map((a, i) => `${CASES[i]![0]}: ${a.outcome}`)).toEqual(
      CASES.map(([name, , expected]) => `${name}: ${expected}`),
    );
    const after = await askH2(session, '/plain/ok?after=all');
    expect(after.body).toBe('{"ok":true}');
  } finally {
    await closeSession(session);
    await busy.close();
  }
});
