/**
 * The field rows of `npm run bench` (issue 33): what operators run instead of Portico, and
 * Node's own floors, each pinned as the gateway is, with the same certificate, on the static
 * upstream of the cost ladder. A peer that cannot start is kept as missing, with why, so that
 * the report prints it instead of leaving it out.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { loadOrCreateDevIssuer } from '../../gateway/identity/dev-issuer.ts';
import { freePort, startNode, waitUntil, type Placement } from './children.ts';
import { plainEntry } from './plain-entry.ts';
import type { FastifyGatewayOptions } from './fastify-gateway.ts';
import { findNginx, startNginx, type NginxVariant } from './nginx.ts';

/** The field rows' names; the report finds the rows of its ratios by them. */
export const FIELD = {
  nginx: 'nginx, keep-alive upstream, no access log',
  nginxLog: 'nginx, access log on',
  nginxHit: 'nginx, proxy_cache hit',
  fastifyBare: 'fastify bare: @fastify/http-proxy only',
  fastify: 'fastify assembled: JWT, Redis limit, pino log',
  fixedFloor: 'node:https fixed answer (hit floor)',
  relayFloor: 'node:https + undici relay (miss floor)',
} as const;

export interface FieldPeer {
  name: string;
  note: string;
  process: ChildProcess;
  url: string;
  /** The row is a cache hit: its request does not ask for no-store. */
  hit?: boolean;
}

export interface Missing {
  name: string;
  why: string;
}

export interface Field {
  peers: FieldPeer[];
  missing: Missing[];
  /** `nginx 1.22.1, fastify 5.12.8`, for the report's software line. */
  versions: string;
}

export interface FieldContext {
  placement: Placement;
  dir: string;
  files: { cert: string; certFile: string; keyFile: string };
  staticUrl: string;
  redisUrl: string;
  redisPrefix: string;
}

interface Spec {
  name: string;
  note: string;
  hit?: boolean;
  /** The peer's process; its URL answers once it is ready (any status). */
  start(port: number): ChildProcess | { missing: string };
}

function fastifyVersion(): string {
  try {
    const file = createRequire(import.meta.url).resolve('fastify/package.json');
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return 'not installed';
  }
}

/** The fastify gateway (fastify-gateway.ts), assembled or bare. */
function startFastify(
  context: FieldContext,
  port: number,
  bare: boolean,
): ChildProcess | { missing: string } {
  if (fastifyVersion() === 'not installed') return { missing: 'fastify not installed (npm install)' };
  const { dir, files } = context;
  // The issuer whose token every row sends; its public keys are what fastify trusts.
  loadOrCreateDevIssuer(dir);
  const options: FastifyGatewayOptions = {
    port,
    upstream: context.staticUrl,
    certFile: files.certFile,
    keyFile: files.keyFile,
    jwksFile: join(dir, 'dev-issuer', 'jwks.json'),
    redisUrl: context.redisUrl,
    redisPrefix: `${context.redisPrefix}fastify:`,
    logFile: join(dir, 'fastify-access.log'),
    bare,
  };
  const name = bare ? 'fastify-bare' : 'fastify';
  return startNode([plainEntry('measure/bench/fastify-gateway.ts'), JSON.stringify(options)], {
    cpu: context.placement.measured,
    logFile: join(dir, `${name}.stderr`),
  });
}

function specs(context: FieldContext, nginx: ReturnType<typeof findNginx>): Spec[] {
  const { placement, dir, files, staticUrl } = context;
  const node = (name: string, args: string[]) =>
    startNode(args, { cpu: placement.measured, logFile: join(dir, `${name}.stderr`) });
  const nginxRow = (variant: NginxVariant) => (port: number) =>
    'missing' in nginx
      ? nginx
      : startNginx(nginx.binary, variant, { benchDir: dir, placement, port, upstream: staticUrl, files });
  return [
    {
      name: FIELD.nginx,
      note: 'Debian nginx, one worker, keep-alive to client and upstream, access_log off',
      start: nginxRow('plain'),
    },
    { name: FIELD.nginxLog, note: 'the same with the combined access log to a file', start: nginxRow('log') },
    {
      name: FIELD.nginxHit,
      note: 'proxy_cache, answered from the cache (primed at start)',
      hit: true,
      start: nginxRow('cache'),
    },
    {
      name: FIELD.fastifyBare,
      note: 'fastify + @fastify/http-proxy (undici): no authentication, limit or log',
      start: (port) => startFastify(context, port, true),
    },
    {
      name: FIELD.fastify,
      note: 'fastify + jose (cached) + @fastify/rate-limit on Redis + @fastify/http-proxy + pino file log',
      start: (port) => startFastify(context, port, false),
    },
    {
      name: FIELD.fixedFloor,
      note: 'node:https answering the static body, prepared once: no Node server answers for less',
      hit: true,
      start: (port) =>
        node('node-fixed', [
          plainEntry('measure/bench/node-floor.ts'),
          'fixed',
          String(port),
          files.certFile,
          files.keyFile,
        ]),
    },
    {
      name: FIELD.relayFloor,
      note: 'node:https + an undici pool to the static upstream, the answer relayed: nothing else',
      start: (port) =>
        node('node-relay', [
          plainEntry('measure/bench/node-floor.ts'),
          'relay',
          String(port),
          files.certFile,
          files.keyFile,
          staticUrl,
        ]),
    },
  ];
}

async function answers(url: string, tls: Agent): Promise<boolean> {
  const response = await request(url, { dispatcher: tls });
  await response.body.dump();
  return true;
}

/** Starts every field peer; one that fails is kept as missing, with its reason. */
export async function startField(context: FieldContext): Promise<Field> {
  const nginx = findNginx();
  const tls = new Agent({ connect: { ca: context.files.cert } });
  const field: Field = {
    peers: [],
    missing: [],
    versions: `nginx ${'missing' in nginx ? 'missing' : nginx.version}, fastify ${fastifyVersion()}`,
  };
  for (const spec of specs(context, nginx)) {
    try {
      const port = await freePort();
      const started = spec.start(port);
      if ('missing' in started) {
        field.missing.push({ name: spec.name, why: started.missing });
        continue;
      }
      const url = `https://127.0.0.1:${port}`;
      await waitUntil(spec.name, started, () => answers(`${url}/v1/orders/static`, tls), 30_000);
      // The cache row measures hits: the first request stores the answer.
      if (spec.hit === true) await answers(`${url}/v1/orders/static`, tls);
      field.peers.push({
        name: spec.name,
        note: spec.note,
        process: started,
        url,
        ...(spec.hit ? { hit: true } : {}),
      });
    } catch (error) {
      field.missing.push({ name: spec.name, why: (error as Error).message });
    }
  }
  await tls.close();
  return field;
}
