/**
 * The peer reference of `npm run bench`: a bare http-proxy 1.18.1 pass-through, set up as
 * fairly as http-proxy allows: the same HTTPS certificate as the gateway, and a keep-alive
 * agent to the upstream (without one, http-proxy sends `Connection: close` and opens a
 * connection per request). No authentication, rate limit, cache, audit or request log.
 *
 *   node measure/bench/http-proxy-peer.ts UPSTREAM_URL PORT CERT_FILE KEY_FILE
 */
import { Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

interface HttpProxy {
  web(req: IncomingMessage, res: ServerResponse): void;
  on(event: 'error', listener: (error: Error, req: IncomingMessage, res: ServerResponse) => void): void;
}
// http-proxy ships no types; this is the part of its API the peer uses.
const { createProxyServer } = createRequire(import.meta.url)('http-proxy') as {
  createProxyServer(this: void, options: { target: string; agent: Agent }): HttpProxy;
};

const [upstream, port, certFile, keyFile] = process.argv.slice(2);
if (upstream === undefined || port === undefined || certFile === undefined || keyFile === undefined) {
  process.stderr.write('usage: http-proxy-peer.ts UPSTREAM_URL PORT CERT_FILE KEY_FILE\n');
  process.exit(2);
}

const proxy = createProxyServer({
  target: upstream,
  // As many pooled connections as the gateway's proxy may open (proxy.connectionsPerUpstream).
  agent: new Agent({ keepAlive: true, maxSockets: 128 }),
});
proxy.on('error', (_error, _req, res) => {
  if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
  res.end('bad gateway');
});

const server = createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) =>
  proxy.web(req, res),
);
server.keepAliveTimeout = 5000;
server.listen(Number(port), '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
