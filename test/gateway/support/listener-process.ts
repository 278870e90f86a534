/**
 * The edge listener alone, in a process of its own (`node listener-process.ts`): the HTTPS
 * and HTTP/2 server of gateway/edge/listener.ts with the `listener` section LISTENER_CONFIG
 * (JSON) gives, read by the gateway's own config parser, and the certificate named by
 * CERT_FILE and KEY_FILE. Every request is answered `{"httpVersion":...}` after 0 to 2 ms. Prints its port.
 *
 * A connection's timing through another process is what a client sees in production; in the
 * test's own process, client and server share one event loop and some races never happen.
 */
import { pino } from 'pino';
import { parseConfig } from '../../../gateway/config/load.ts';
import { createHttpsListener } from '../../../gateway/edge/listener.ts';
import { loadCertificate } from '../../../gateway/edge/tls.ts';
import { createMetrics } from '../../../gateway/observability/metrics.ts';

const certFile = process.env['CERT_FILE']!;
const keyFile = process.env['KEY_FILE']!;
const listener = JSON.parse(process.env['LISTENER_CONFIG'] ?? '{}') as Record<string, unknown>;
const config = parseConfig({ listener: { ...listener, tls: { certFile, keyFile } } }, { env: {} }).config
  .listener;

const server = createHttpsListener(config, {
  certificate: loadCertificate(certFile, keyFile),
  log: pino({ level: 'warn' }),
  metrics: createMetrics({ processMetrics: false }),
  onRequest: (req, res) => {
    req.resume();
    setTimeout(
      () => {
        res.writeHead(200, ['content-type', 'application/json']);
        res.end(JSON.stringify({ httpVersion: req.httpVersion }));
      },
      Math.floor(Math.random() * 3),
    );
  },
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address !== null ? address.port : 0}\n`);
});
