/**
 * node:http2 as the test client: one request on a session, its whole answer collected.
 */
import { connect, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';

export interface H2Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A session to the gateway, trusting its test certificate, once the server's SETTINGS came. */
export function h2Session(port: number, ca: string): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = connect(`https://localhost:${port}`, { ca });
    session.once('remoteSettings', () => {
      session.off('error', reject);
      resolve(session);
    });
    session.once('error', reject);
  });
}

/** Sends one request; `body` as given (a function writes it in steps). */
export function h2Request(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  body?: string | Buffer | ((stream: ReturnType<ClientHttp2Session['request']>) => void),
): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let received: H2Response['headers'] = {};
    const chunks: Buffer[] = [];
    stream.on('response', (head) => {
      status = Number(head[':status']);
      received = head;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve({ status, headers: received, body: Buffer.concat(chunks).toString() }));
    stream.on('error', reject);
    if (typeof body === 'function') body(stream);
    else if (body !== undefined) stream.end(body);
  });
}

export function closeSession(session: ClientHttp2Session): Promise<void> {
  return new Promise((resolve) => {
    if (session.destroyed) return resolve();
    session.close(() => resolve());
    setTimeout(() => {
      session.destroy();
      resolve();
    }, 1000).unref();
  });
}
