/**
 * What each row of `npm run bench` sends, to which process, and what it must get back: the
 * main rows on the resource service (direct, gateway miss / hit / 304, http-proxy peer), then
 * the cost ladder on the static upstream (peer, then one gateway per rung), then the field on
 * the same static upstream (nginx, the fastify-assembled gateway, Node's floors).
 */
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import type { Agent } from 'undici';
import { request } from 'undici';
import { loadAssertionKeys } from '../../shared/assertion-keys.ts';
import { signAssertion } from '../../shared/identity-assertion.ts';
import { loadOrCreateDevIssuer } from '../../gateway/identity/dev-issuer.ts';
import { createDpopKey, proofMaker, type DpopLoad } from './dpop-proofs.ts';
import { RUNGS } from './ladder.ts';
import type { GatewayProcess, Running } from './processes.ts';
import { baselineRowName, MAIN_GATEWAY_ROWS, REPLICAS_ROW, workersRowName } from './row-choice.ts';

const CUSTOMER = 'cus_bench';
const SCOPES = ['orders:read', 'orders:write'];

export interface Row {
  name: string;
  group: 'main' | 'ladder' | 'field';
  /** The process whose CPU and memory the row measures, and what it is. */
  measured: { process: ChildProcess; role: 'service' | 'peer' | 'gateway' };
  /** A gateway's admin origin and audit log, for the row's counters. */
  gateway?: GatewayProcess;
  url: string;
  headers: () => Record<string, string>;
  expectedStatus: number;
  note: string;
  /** Driven over HTTP/2 by load-h2.ts; otherwise HTTP/1.1 by autocannon (load.ts). */
  protocol?: 'h2';
  /** A new DPoP proof in each request the load generator sends (dpop-proofs.ts). */
  dpop?: DpopLoad;
  /** Ladder rows: the row whose figure this one's step is taken from, when not the one before. */
  stepFrom?: string;
}

/** Creates an order through the gateway, as a client would; returns its id. */
async function createOrder(gatewayUrl: string, token: string, tls: Agent): Promise<string> {
  const response = await request(`${gatewayUrl}/v1/orders`, {
    method: 'POST',
    dispatcher: tls,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'idempotency-key': randomUUID(),
    },
    body: JSON.stringify({ items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }], currency: 'EUR' }),
  });
  const body = (await response.body.json()) as { id?: string };
  if (response.statusCode !== 201 || body.id === undefined)
    throw new Error(`creating an order answered ${response.statusCode}: ${JSON.stringify(body)}`);
  return body.id;
}

/** The current ETag of `url`, read from the service itself so the gateway's cache stays empty. */
async function currentEtag(url: string, headers: Record<string, string>, tls: Agent): Promise<string> {
  const response = await request(url, { headers, dispatcher: tls });
  await response.body.dump();
  const etag = response.headers['etag'];
  if (response.statusCode !== 200 || typeof etag !== 'string')
    throw new Error(`GET ${url} from the service answered ${response.statusCode} without an ETag`);
  return etag;
}

export async function defineRows(running: Running, tls: Agent): Promise<Row[]> {
  const issuer = loadOrCreateDevIssuer(running.dir);
  const token = await issuer.sign(
    { sub: 'bench-user', client_id: 'bench', customer_id: CUSTOMER, scope: SCOPES.join(' ') },
    3600,
  );
  const bearer = { authorization: `Bearer ${token}` };
  const cachedOrder = await createOrder(running.gateway.url, token, tls);
  const missOrder = await createOrder(running.gateway.url, token, tls);
  const path = `/v1/orders/${cachedOrder}`;
  const [key] = loadAssertionKeys({}, running.dir);
  // What the gateway would add: the service refuses any request without it. Minted per round
  // (it lives at most 120 s), for the one method and target the row sends.
  const assertion = () => ({
    ...bearer,
    'portico-identity': signAssertion(
      key!,
      { subject: 'bench-user', customerId: CUSTOMER, scopes: SCOPES, authMethod: 'jwt' },
      { method: 'GET', target: path, requestId: 'bench' },
      { lifetimeSeconds: 120 },
    ),
  });
  const etag = await currentEtag(`${running.serviceUrl}${path}`, assertion(), tls);
  const gateway = { process: running.gateway.process, role: 'gateway' as const };
  const miss: Row = {
    name: MAIN_GATEWAY_ROWS.miss,
    group: 'main',
    measured: gateway,
    gateway: running.gateway,
    url: `${running.gateway.url}/v1/orders/${missOrder}`,
    headers: () => ({ ...bearer, 'cache-control': 'no-store' }),
    expectedStatus: 200,
    note: 'full pipeline; request no-store: looked up, never stored',
  };
  const hit: Row = {
    name: MAIN_GATEWAY_ROWS.hit,
    group: 'main',
    measured: gateway,
    gateway: running.gateway,
    url: `${running.gateway.url}${path}`,
    headers: () => bearer,
    expectedStatus: 200,
    note: 'full pipeline, answered from the cache',
  };
  const main: Row[] = [
    {
      name: 'direct service',
      group: 'main',
      measured: { process: running.service, role: 'service' },
      url: `${running.serviceUrl}${path}`,
      headers: assertion,
      expectedStatus: 200,
      note: 'plain HTTP straight to the service, client sends the signed assertion',
    },
    miss,
    ...onBaseline(running, miss),
    {
      name: REPLICAS_ROW,
      group: 'main',
      measured: { process: running.replicas.process, role: 'gateway' },
      gateway: running.replicas,
      url: `${running.replicas.url}/v1/orders/${missOrder}`,
      headers: () => ({ ...bearer, 'cache-control': 'no-store' }),
      expectedStatus: 200,
      note: 'the cache-miss row, /v1 balanced over two service processes (upstreams)',
    },
    hit,
    ...onBaseline(running, hit),
    {
      ...hit,
      name: MAIN_GATEWAY_ROWS.h2Hit,
      protocol: 'h2',
      note: 'the cache-hit row over HTTP/2: 4 connections of 8 streams (load-h2.ts)',
    },
    {
      name: MAIN_GATEWAY_ROWS.notModified,
      group: 'main',
      measured: gateway,
      gateway: running.gateway,
      url: `${running.gateway.url}${path}`,
      headers: () => ({ ...bearer, 'if-none-match': etag }),
      expectedStatus: 304,
      note: 'If-None-Match = current ETag, fresh entry: 304, no upstream call',
    },
    {
      name: 'http-proxy 1.18.1 (peer)',
      group: 'main',
      measured: { process: running.peer.process, role: 'peer' },
      url: `${running.peer.url}${path}`,
      headers: assertion,
      expectedStatus: 200,
      note: 'HTTPS + keep-alive pass-through: no auth/limit/cache/audit/log',
    },
  ];
  const dpopKey = createDpopKey();
  const dpop = {
    privateJwk: dpopKey.privateJwk,
    token: await issuer.sign(
      {
        sub: 'bench-user',
        client_id: 'bench',
        customer_id: CUSTOMER,
        scope: SCOPES.join(' '),
        cnf: { jkt: dpopKey.jkt },
      },
      3600,
    ),
  };
  return [
    ...main,
    ...workerRows(running, bearer),
    ...ladderRows(running, bearer, dpop),
    ...fieldRows(running, bearer),
  ];
}

/**
 * `row` through the gateway of the BENCH_BASELINE checkout, when there is one: the same request,
 * interleaved with this build's, so that a change is measured before and after in one run.
 */
function onBaseline(running: Running, row: Row): Row[] {
  const baseline = running.baseline;
  if (baseline === undefined) return [];
  return [
    {
      ...row,
      name: baselineRowName(row.name),
      measured: { process: baseline.process, role: 'gateway' },
      gateway: baseline,
      url: row.url.replace(running.gateway.url, baseline.url),
      note: `the "${row.name}" row through the build of another checkout (BENCH_BASELINE)`,
    },
  ];
}

/** The shipped gateway on the static upstream with one worker and with two (GATEWAY_WORKERS). */
function workerRows(running: Running, bearer: Record<string, string>): Row[] {
  return running.workers.map((gateway, index) => ({
    name: workersRowName(index + 1),
    group: 'main',
    measured: { process: gateway.process, role: 'gateway' },
    gateway,
    url: `${gateway.url}/v1/orders/static`,
    headers: () => ({ ...bearer, 'cache-control': 'no-store' }),
    expectedStatus: 200,
    note:
      index === 0
        ? 'GATEWAY_WORKERS=1: full pipeline to the static upstream, one CPU'
        : 'GATEWAY_WORKERS=2: the same, two worker processes on both CPUs (shared with the load generator)',
  }));
}

function ladderRows(
  running: Running,
  bearer: Record<string, string>,
  dpop: Pick<DpopLoad, 'privateJwk' | 'token'>,
): Row[] {
  // The same request on every rung: the rungs without authentication ignore the token.
  const headers = () => ({ ...bearer, 'cache-control': 'no-store' });
  const peer: Row = {
    name: 'ladder 0: http-proxy (peer)',
    group: 'ladder',
    measured: { process: running.staticPeer.process, role: 'peer' },
    url: `${running.staticPeer.url}/v1/orders/static`,
    headers,
    expectedStatus: 200,
    note: 'the peer on the same static upstream, for reference',
  };
  return [
    peer,
    ...RUNGS.map((rung, index): Row => {
      const url = `${running.ladder[index]!.url}/v1/orders/static`;
      const row: Row = {
        name: rung.name,
        group: 'ladder',
        measured: { process: running.ladder[index]!.process, role: 'gateway' },
        gateway: running.ladder[index]!,
        url,
        headers,
        expectedStatus: 200,
        note: rung.note,
        ...(rung.variantOf === undefined ? {} : { stepFrom: RUNGS[rung.variantOf - 1]!.name }),
      };
      return rung.dpop === true ? withDpop(row, { ...dpop, method: 'GET', htu: url }) : row;
    }),
  ];
}

/**
 * `row` with a DPoP-bound token: the load generator puts a new proof in each request, and
 * `headers()` makes a new one each call (the probe's, the warm-up's first).
 */
function withDpop(row: Row, dpop: DpopLoad): Row {
  const proof = proofMaker(dpop);
  return {
    ...row,
    dpop,
    headers: () => ({ authorization: `DPoP ${dpop.token}`, dpop: proof(), 'cache-control': 'no-store' }),
  };
}

/**
 * The field's rows: the ladder's request (the same token; the peers without authentication
 * ignore it), without no-store on a cache-hit row.
 */
function fieldRows(running: Running, bearer: Record<string, string>): Row[] {
  return running.field.peers.map((peer) => ({
    name: peer.name,
    group: 'field',
    measured: { process: peer.process, role: 'peer' },
    url: `${peer.url}/v1/orders/static`,
    headers: () => (peer.hit === true ? bearer : { ...bearer, 'cache-control': 'no-store' }),
    expectedStatus: 200,
    note: peer.note,
  }));
}
