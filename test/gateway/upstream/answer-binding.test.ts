/**
 * An answer is bound to its request on the upstream hop (issue 31, item 4). An upstream that
 * writes an extra, unsolicited answer after a real one poisons its pooled connection: whatever
 * comes next on it was taken for the answer to the next request, another caller's body. With
 * the upstream's origin in `proxy.echoingOrigins`, the gateway sends a Portico-Exchange-Id per
 * attempt and takes only an answer that echoes it: anything else is a 502 and the connection
 * is dropped. Unsolicited bytes on an idle pooled connection end that connection (undici's own
 * check, pinned here). Every request carries a unique marker and every body is checked.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, startTestGateway, type TestGateway } from '../support/harness.ts';
import { startPoisoningUpstream, type PoisoningUpstream } from '../support/poisoning-upstream.ts';

const REQUESTS = 400;
const IN_FLIGHT = 16;

let bound: PoisoningUpstream;
let unbound: PoisoningUpstream;
let gw: TestGateway;
const agents: Record<'http1' | 'http2', Agent> = {} as never;

beforeAll(async () => {
  bound = await startPoisoningUpstream();
  unbound = await startPoisoningUpstream();
  gw = await startTestGateway(bound.url, {
    routes: [
      { prefix: '/bound', upstream: bound.url, auth: 'none' },
      { prefix: '/unbound', upstream: unbound.url, auth: 'none' },
    ],
    rateLimits: { policies: [] },
    proxy: { echoingOrigins: [bound.url], retries: 0 },
  });
  const connect = { ca: gw.certificate.cert, servername: 'localhost' };
  agents.http1 = new Agent({ connect, connections: IN_FLIGHT });
  agents.http2 = new Agent({ connect, allowH2: true });
});
afterAll(async () => {
  await Promise.all(Object.values(agents).map((agent) => agent?.close()));
  await gw?.close();
  await bound?.close();
  await unbound?.close();
});

interface Outcome {
  status: number;
  marker: string | undefined;
  contentType: string | undefined;
}

async function ask(protocol: 'http1' | 'http2', path: string): Promise<Outcome> {
  const response = await request(`${gw.origin}${path}`, { dispatcher: agents[protocol] });
  const text = await response.body.text();
  const contentType = response.headers['content-type'] as string | undefined;
  let marker: string | undefined;
  if (response.statusCode === 200) marker = (JSON.parse(text) as { marker?: string }).marker;
  return { status: response.statusCode, marker, contentType };
}

/** `REQUESTS` requests, `IN_FLIGHT` at a time, each with its own marker; the tally of outcomes. */
async function storm(protocol: 'http1' | 'http2', prefix: string, mode: string) {
  const tally = { served: 0, refused: 0, wrong: [] as string[], other: [] as string[] };
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) {
      const marker = `${mode}-${protocol}-${next++}`;
      const outcome = await ask(protocol, `${prefix}/${mode}/${marker}`);
      if (outcome.status === 200 && outcome.marker === marker) tally.served++;
      else if (outcome.status === 200) tally.wrong.push(`${marker} got ${outcome.marker}`);
      else if (outcome.status === 502 && outcome.contentType === 'application/problem+json') tally.refused++;
      else tally.other.push(`${marker}: ${outcome.status}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return tally;
}

describe.each(['http1', 'http2'] as const)('over %s', (protocol) => {
  it.each(['next', 'soon'])(
    'a stray answer written %s is never delivered to another request',
    async (mode) => {
      const straysBefore = bound.strays();
      const tally = await storm(protocol, '/bound', mode);
      // The upstream did poison its connections: what follows is tested against real strays.
      expect(bound.strays()).toBeGreaterThan(straysBefore);
      expect({ wrong: tally.wrong.length, first: tally.wrong.slice(0, 3) }).toEqual({ wrong: 0, first: [] });
      expect(tally.other.slice(0, 5)).toEqual([]);
      expect(tally.served + tally.refused).toBe(REQUESTS);
      // A stray taken for the next answer was seen and refused, not relayed.
      if (mode === 'next') expect(tally.refused).toBeGreaterThan(0);

      // Once the last strays have landed (on idle connections, which they end), the next good
      // request is served, its own answer.
      await sleep(100);
      const after = await ask(protocol, `/bound/good/after-${mode}-${protocol}`);
      expect(after).toMatchObject({ status: 200, marker: `after-${mode}-${protocol}` });
    },
    60_000,
  );

  it('unsolicited bytes on an idle pooled connection end that connection', async () => {
    // One request at a time: each answer's stray arrives while the connection is idle, and the
    // next request must go out on a new connection, never read the stray as its answer.
    const connectionsBefore = unbound.connections();
    for (let i = 0; i < 6; i++) {
      const marker = `late-${protocol}-${i}`;
      expect(await ask(protocol, `/unbound/late/${marker}`)).toMatchObject({ status: 200, marker });
      await sleep(80);
    }
    // The first may take a clean idle connection left by an earlier test; each one after it
    // follows a poisoned connection, which must have been dropped.
    expect(unbound.connections() - connectionsBefore).toBeGreaterThanOrEqual(5);
    const after = await ask(protocol, `/unbound/good/after-late-${protocol}`);
    expect(after).toMatchObject({ status: 200, marker: `after-late-${protocol}` });
  });
});

it('counts answers that did not echo their exchange id in /metrics', async () => {
  const metrics = await (await fetch(`${gw.adminOrigin}/metrics`)).text();
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith('portico_upstream_errors_total{') && l.includes('kind="mismatch"'));
  expect(line).toBeDefined();
  expect(Number(line?.split(' ').at(-1))).toBeGreaterThan(0);
});
