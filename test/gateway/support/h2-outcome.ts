/**
 * What an HTTP/2 client makes of one answer: whole, or cut by RST_STREAM INTERNAL_ERROR, or
 * ended in a way that would pass for whole without being so (the defect issue 31 names).
 */
import { constants, type ClientHttp2Session } from 'node:http2';

export interface H2Answer {
  /** The status of an answer that ended whole; 'cut' for RST_STREAM INTERNAL_ERROR. */
  outcome: number | string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  rstCode: number;
}

/**
 * One GET on `session`, read until its stream closes. An answer is whole only when it ended
 * with no error code and its body has the length its head announced; INTERNAL_ERROR is 'cut';
 * any other ending is named, so that a test expecting either fails on it.
 */
export function askH2(session: ClientHttp2Session, path: string): Promise<H2Answer> {
  return new Promise((resolve) => {
    const stream = session.request({ ':path': path });
    let status = 0;
    let headers: H2Answer['headers'] = {};
    const chunks: Buffer[] = [];
    let ended = false;
    const timer = setTimeout(() => stream.close(constants.NGHTTP2_CANCEL), 10_000);
    stream.on('response', (head) => {
      status = Number(head[':status']);
      headers = head;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => (ended = true));
    stream.on('error', () => {});
    stream.on('close', () => {
      clearTimeout(timer);
      const body = Buffer.concat(chunks);
      const { rstCode } = stream;
      const declared = headers['content-length'];
      let outcome: H2Answer['outcome'];
      if (rstCode === constants.NGHTTP2_INTERNAL_ERROR) outcome = 'cut';
      else if (rstCode !== constants.NGHTTP2_NO_ERROR) outcome = `reset ${rstCode}`;
      else if (!ended) outcome = 'closed without end';
      else if (declared !== undefined && Number(declared) !== body.length)
        outcome = `short: ${body.length} of ${String(declared)} bytes, no error`;
      else outcome = status;
      resolve({ outcome, status, headers, body: body.toString('latin1'), rstCode });
    });
  });
}
