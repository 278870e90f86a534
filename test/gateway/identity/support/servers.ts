/**
 * Real servers for identity tests: an HTTPS JWKS endpoint whose keys and availability the
 * test controls and whose requests it counts, a bystander server that must never be called
 * (the jku/x5u target), and a fetch that trusts the test certificate.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { JSONWebKeySet } from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import type { JwksFetch } from '../../../../gateway/identity/key-source.ts';
import { createTestCertificate, type TestCertificate } from '../../../support/tls.ts';

export interface JwksServer {
  url: string;
  /** Requests received so far. */
  readonly requests: number;
  jwks: JSONWebKeySet;
  /** When true, every connection is cut: the identity provider is unreachable. */
  down: boolean;
  close(): Promise<void>;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export async function startJwksServer(cert: TestCertificate, jwks: JSONWebKeySet): Promise<JwksServer> {
  let requests = 0;
  const state = { jwks, down: false };
  const server = createHttpsServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    requests += 1;
    if (state.down) {
      req.socket.destroy();
      return;
    }
    res.setHeader('content-type', 'application/jwk-set+json');
    res.end(JSON.stringify(state.jwks));
  });
  const port = await listen(server);
  return {
    url: `https://localhost:${port}/jwks`,
    get requests() {
      return requests;
    },
    get jwks() {
      return state.jwks;
    },
    set jwks(value) {
      state.jwks = value;
    },
    get down() {
      return state.down;
    },
    set down(value) {
      state.down = value;
    },
    close: () => close(server),
  };
}

/** A server that records every request: the place a forged `jku`/`x5u` points at. */
export async function startBystander(): Promise<{
  url: string;
  received: IncomingMessage[];
  close(): Promise<void>;
}> {
  const received: IncomingMessage[] = [];
  const server = createHttpServer((req, res) => {
    received.push(req);
    res.setHeader('content-type', 'application/json');
    res.end('{"keys":[]}');
  });
  const port = await listen(server);
  return { url: `http://127.0.0.1:${port}`, received, close: () => close(server) };
}

/** A fetch for the gateway's JWKS client that trusts the test certificate, and a certificate. */
export async function createTrustingFetch(): Promise<{
  cert: TestCertificate;
  fetch: JwksFetch;
  agent: Agent;
}> {
  const cert = await createTestCertificate();
  const agent = new Agent({ connect: { ca: cert.cert } });
  const fetch: JwksFetch = (url, init) => undiciFetch(url, { ...init, dispatcher: agent });
  return { cert, fetch, agent };
}
