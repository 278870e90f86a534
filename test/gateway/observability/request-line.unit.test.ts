/**
 * The request line is written by hand (observability/logger.ts, requestLineWriter): it must be
 * the line pino itself writes for the same fields at info, one parseable JSON object per line,
 * whatever a client put in the path.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger, requestLineWriter, type RequestLine } from '../../../gateway/observability/logger.ts';

function capture(level: string) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((line) => line !== ''),
      );
      callback();
    },
  });
  return { log: createLogger({ level, destination }), destination, lines };
}

const LINE: RequestLine = {
  requestId: '4b0c3f0e-8f0a-4a57-b8a3-1f2e3d4c5b6a',
  clientRequestId: 'client-chosen-7',
  traceId: '0af7651916cd43dd8448eb211c80319c',
  method: 'GET',
  path: '/v1/orders/ord_1',
  route: '/v1',
  status: 200,
  durationMs: 1.3,
  aborted: false,
};

describe('the request line', () => {
  it("is pino's own line for the same fields, but for the time", () => {
    const ours = capture('info');
    requestLineWriter(ours.log)!(LINE);
    const theirs = capture('info');
    // What the request line said through pino before: the same fields, `aborted` only when true.
    const fields = { ...LINE } as Partial<RequestLine>;
    delete fields.aborted;
    pino({ level: 'info', base: { service: 'portico-gateway' } }, theirs.destination).info(fields, 'request');
    expect(ours.lines).toHaveLength(1);
    const strip = (line: string) => line.replace(/,"time":[^,]+/, '');
    expect(strip(ours.lines[0]!)).toBe(strip(theirs.lines[0]!));
    expect(JSON.parse(ours.lines[0]!)['time']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('stays one JSON object per line with quotes, controls and line separators in the path, and says aborted', () => {
    const { log, lines } = capture('info');
    const path = '/v1/"x"\\\n\r\u2028\u0000é';
    requestLineWriter(log)!({ ...LINE, path, traceId: undefined, aborted: true, status: 499 });
    expect(lines).toHaveLength(1);
    const parsed = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(parsed).toMatchObject({
      level: 30,
      service: 'portico-gateway',
      path,
      status: 499,
      aborted: true,
      msg: 'request',
    });
    expect(parsed).not.toHaveProperty('traceId');
  });

  it('is not written when the level leaves info out', () => {
    expect(requestLineWriter(capture('warn').log)).toBeUndefined();
  });
});
