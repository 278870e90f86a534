/**
 * The cost ladder's upstream: one fixed JSON answer (the size of an order) to any request,
 * prepared once, so that every rung of the ladder and the peer next to it relay exactly the
 * same bytes, and the upstream's own cost stays off the measured CPU.
 *
 *   node measure/bench/static-upstream.ts PORT [CERT_FILE KEY_FILE CLIENT_CA_FILE]
 *
 * With the three files it serves HTTPS and requires a client certificate from that CA, as the
 * resource service does by default: the ladder's rung that prices the internal mutual-TLS hop.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { TLS_OPTIONS } from '../../shared/tls-policy.ts';
import { STATIC_BODY, STATIC_HEADERS } from './static-answer.ts';

function answer(req: IncomingMessage, res: ServerResponse): void {
  // Read whatever was sent, then answer; keep-alive stays usable.
  req.resume();
  req.on('end', () => {
    res.writeHead(200, STATIC_HEADERS);
    res.end(STATIC_BODY);
  });
}

const [, , port, certFile, keyFile, clientCaFile] = process.argv;
const server =
  certFile === undefined || keyFile === undefined || clientCaFile === undefined
    ? createServer(answer)
    : createHttpsServer(
        {
          ...TLS_OPTIONS,
          cert: readFileSync(certFile),
          key: readFileSync(keyFile),
          ca: readFileSync(clientCaFile),
          requestCert: true,
          rejectUnauthorized: true,
        },
        answer,
      );
server.keepAliveTimeout = 60_000;
server.listen(Number(port), '127.0.0.1');
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});
