/**
 * C1 control characters from a client reach no log raw (issue 34, item 7). An HTTP/2 `:path`
 * may carry bytes 0x80-0x9f, which Node hands over as U+0080-U+009F; JSON.stringify leaves them
 * as they are, so the request line carried them raw (the audit log already escaped them), and a
 * terminal reading the log obeys them (CSI, U+009B, drives it as ESC [ does).
 */
import { connect } from 'node:http2';
import { expect, it } from 'vitest';
import { useRecordingGateway } from '../support/harness.ts';

const running = useRecordingGateway();

async function h2Status(path: string): Promise<number> {
  const session = connect(running.gw.origin, { ca: running.gw.certificate.cert });
  try {
    const stream = session.request({ ':path': path });
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      stream.once('response', resolve);
      stream.once('error', reject);
    });
    stream.resume();
    await new Promise((resolve) => stream.once('close', resolve));
    return Number(headers[':status']);
  } finally {
    session.close();
  }
}

it('an HTTP/2 :path with C1 controls is logged with them escaped', async () => {
  const marker = `c1-${Date.now()}`;
  const status = await h2Status(`/v1/${marker}\u009b31m\u0085x`);
  expect(status).toBeGreaterThanOrEqual(200);
  let line: string | undefined;
  for (let i = 0; i < 100 && line === undefined; i++) {
    line = running.gw
      .logText()
      .split('\n')
      .find((l) => l.includes(marker) && l.includes('"msg":"request"'));
    if (line === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(line, 'the request line of that request').toBeDefined();
  expect(line).not.toMatch(/[\u0080-\u009f\u2028\u2029]/);
  expect(line).toContain('\\u009b31m\\u0085x');
  // Still one JSON line that reads back as what was asked for.
  expect((JSON.parse(line!) as { path: string }).path).toBe(`/v1/${marker}\u009b31m\u0085x`);
});
