/**
 * Node's floors, two field rows of `npm run bench`: what node:https alone costs per request,
 * with the bench's certificate and the gateway's TLS policy, so that no Node gateway can cost
 * less on this machine.
 *
 *   node measure/bench/node-floor.ts fixed PORT CERT_FILE KEY_FILE
 *   node measure/bench/node-floor.ts relay PORT CERT_FILE KEY_FILE UPSTREAM_URL
 *
 * fixed: every request answered with the static upstream's body and fields, prepared once:
 * the floor under a cache hit. relay: every request sent to the static upstream over an undici
 * keep-alive pool, the answer collected and relayed (status, end-to-end fields, body): the floor
 * under a miss. Neither authenticates, limits, caches or logs.
 */
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { Pool, type Dispatcher } from 'undici';
import { TLS_OPTIONS } from '../../shared/tls-policy.ts';
import { STATIC_BODY, STATIC_HEADERS } from './static-answer.ts';

const [mode, port, certFile, keyFile, upstream] = process.argv.slice(2);
if (
  (mode !== 'fixed' && mode !== 'relay') ||
  port === undefined ||
  certFile === undefined ||
  keyFile === undefined ||
  (mode === 'relay' && upstream === undefined)
) {
  process.stderr.write('usage: node-floor.ts fixed|relay PORT CERT_FILE KEY_FILE [UPSTREAM_URL]\n');
  process.exit(2);
}

function fixed(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  res.writeHead(200, STATIC_HEADERS);
  res.end(STATIC_BODY);
}

/** Fields of one hop only (RFC 9110 §7.6.1), and Host, which the pool sets for its origin. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

function endToEnd(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined && !HOP_BY_HOP.has(name)) kept[name] = value;
  return kept;
}

// As many connections as the gateway's proxy may open to one upstream.
const pool = mode === 'relay' ? new Pool(upstream!, { connections: 128 }) : undefined;

async function relay(req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    const bodyless = req.method === 'GET' || req.method === 'HEAD';
    if (bodyless) req.resume();
    const answer = await pool!.request({
      method: req.method as Dispatcher.HttpMethod,
      path: req.url ?? '/',
      headers: endToEnd(req.headers),
      body: bodyless ? null : req,
    });
    const body = Buffer.from(await answer.body.arrayBuffer());
    res.writeHead(answer.statusCode, endToEnd(answer.headers));
    res.end(body);
  } catch {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end('bad gateway');
  }
}

const server = createServer(
  { ...TLS_OPTIONS, cert: readFileSync(certFile), key: readFileSync(keyFile) },
  mode === 'fixed' ? fixed : (req, res) => void relay(req, res),
);
server.keepAliveTimeout = 60_000;
server.listen(Number(port), '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
