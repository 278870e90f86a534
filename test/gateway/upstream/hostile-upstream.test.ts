/**
 * Hostile upstream: every broken or odd HTTP/1.1 answer an upstream can give, written on a raw
 * socket, behind an uncached and a cached route. For each, what the client gets is asserted,
 * and the same gateway then serves a good request: no answer can take the gateway down, and
 * no byte of a bad answer reaches the next request.
 */
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../support/harness.ts';
import { BODIES, CASES, startHostileSetup, type Outcome } from '../support/hostile-cases.ts';
import type { HostileUpstream } from '../support/hostile-upstream.ts';

interface ClientAnswer {
  outcome: Outcome;
  status: number;
  headers: Record<string, string>;
  body: string;
  raw: string;
}

/** One request with `Connection: close`, read until the gateway closes: complete or cut. */
function ask(port: number, ca: string, path: string): Promise<ClientAnswer> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error(`no end within 10 s for ${path}`)), 10_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString('latin1');
      // Interim (1xx) heads come before the final answer (RFC 9110 section 15.2).
      const final = raw.replace(/^(?:HTTP\/1\.1 1\d\d [^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n)+/, '');
      const end = final.indexOf('\r\n\r\n');
      if (end === -1) return resolve({ outcome: 'cut', status: 0, headers: {}, body: '', raw });
      const [statusLine = '', ...lines] = final.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const c = line.indexOf(':');
        headers[line.slice(0, c).toLowerCase()] = line.slice(c + 1).trim();
      }
      const status = Number(statusLine.split(' ')[1]);
      const rest = final.slice(end + 4);
      let complete: boolean;
      let body = rest;
      if (headers['content-length'] !== undefined)
        complete = Buffer.byteLength(rest, 'latin1') === Number(headers['content-length']);
      else if (headers['transfer-encoding'] === 'chunked') {
        complete = rest.endsWith('0\r\n\r\n');
        body = dechunk(rest);
      } else complete = status === 204 || status === 304;
      resolve({ outcome: complete ? status : 'cut', status, headers, body, raw });
    });
    socket.once('secureConnect', () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`),
    );
  });
}

function dechunk(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, eol), 16);
    if (!(size > 0)) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 4 + size);
  }
}

let upstream: HostileUpstream;
let gw: TestGateway;
beforeAll(async () => {
  ({ upstream, gw } = await startHostileSetup());
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe.each(['plain', 'cached'])('behind the %s route', (route) => {
  it.each(CASES)('%s', async (name, _answer, expected) => {
    const path = `/${route}/${name}`;
    const answer = await ask(gw.port, gw.certificate.cert, path);
    expect(answer.outcome, answer.raw.slice(0, 400)).toBe(expected);
    if (typeof expected === 'number' && expected >= 500) {
      // The gateway's own answer: a problem document, never a piece of the upstream's.
      expect(answer.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(answer.body)).toMatchObject({ status: expected });
    }
    if (expected === 200) expect(answer.body).toBe(BODIES[name]);
    expect(answer.raw).not.toContain('SMUGG');
    if (route === 'cached') {
      // `stored` only for an answer in the store as its head went out (RFC 9211): never for
      // a cut one, nor for a body that was still streaming.
      if (expected === 'cut' || name === 'chunked-slow-cacheable')
        expect(String(answer.headers['cache-status'] ?? '')).not.toMatch(/stored/);
      if (name === 'chunked-slow-cacheable') {
        // Whole once it ended: stored then, and served from the store.
        const again = await ask(gw.port, gw.certificate.cert, path);
        expect(again.outcome).toBe(200);
        expect(String(again.headers['cache-status'])).toMatch(/; hit/);
      }
    }
    if (name === 'utf8-header-value')
      // Header bytes pass through as they came (latin1 in, latin1 out), never re-encoded.
      expect(Buffer.from(answer.headers['x-name'] ?? '', 'latin1')).toEqual(Buffer.from('😀', 'utf8'));

    if (route === 'cached' && expected !== 200 && expected !== 204) {
      // Nothing of a failed answer was stored: asking again goes to the upstream again.
      const before = upstream.hits.get(name) ?? 0;
      const again = await ask(gw.port, gw.certificate.cert, path);
      expect(again.outcome).toBe(expected);
      expect(upstream.hits.get(name)).toBeGreaterThan(before);
    }

    // The same gateway, still up, serves a good request, twice over a reused connection.
    for (const n of [1, 2]) {
      const after = await ask(gw.port, gw.certificate.cert, `/${route}/ok?after=${name}&n=${n}`);
      expect(after.outcome).toBe(200);
      expect(after.body).toBe('{"ok":true}');
    }
  });
});

it('answers several odd cases at once and goes on serving', async () => {
  const names = CASES.map(([name]) => name);
  const answers = await Promise.all(names.map((name) => ask(gw.port, gw.certificate.cert, `/plain/${name}`)));
  expect(answers.map((a) => a.outcome)).toEqual(CASES.map(([, , expected]) => expected));
  const after = await ask(gw.port, gw.certificate.cert, '/plain/ok?after=all');
  expect(after.body).toBe('{"ok":true}');
});
