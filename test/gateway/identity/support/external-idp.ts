/**
 * Starts external-idp-server.ts in its own process, as an operator runs an identity provider
 * next to Portico, and speaks to it as its OAuth clients do: tokens by the client-credentials
 * grant, revocation at its revocation endpoint (RFC 7009).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { JWK } from 'jose';
import { request } from 'undici';

const IDP_SCRIPT = new URL('./external-idp-server.ts', import.meta.url).pathname;

export interface ExternalIdp {
  child: ChildProcess;
  issuer: string;
  /** The private key of the `portico-gateway-jwt` client (private_key_jwt). */
  gatewayKey: JWK;
  /** The TLS origin of its token endpoint, when started with `mtls` (certificate-bound tokens). */
  mtlsOrigin?: string;
  /** An access token by the client-credentials grant (client secret `<id>-secret`). */
  token(clientId: string, options?: { scope?: string; resource?: string }): Promise<string>;
  /** Revokes a token at the provider, as its client. */
  revoke(clientId: string, token: string): Promise<void>;
  /** The provider's introspection answer about `token`, as client `clientId` gets it (`accept`). */
  introspect(clientId: string, token: string, accept: string): Promise<string>;
  stop(): Promise<void>;
}

const basic = (clientId: string) =>
  `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`;

/** `mtls`: a certificate for a TLS port of its token endpoint that asks for client certificates. */
export async function startExternalIdp(
  options: { mtls?: { certFile: string; keyFile: string } } = {},
): Promise<ExternalIdp> {
  const { mtls } = options;
  const args = mtls === undefined ? [] : ['--mtls-cert', mtls.certFile, '--mtls-key', mtls.keyFile];
  const child = spawn(process.execPath, [IDP_SCRIPT, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`identity provider not up in 15 s: ${stderr}`)), 15_000);
    createInterface({ input: child.stdout }).once('line', (text) => {
      clearTimeout(timer);
      resolve(text);
    });
    child.once('exit', (code) => reject(new Error(`identity provider exited ${code}: ${stderr}`)));
  });
  const { issuer, gatewayKey, mtlsOrigin } = JSON.parse(line) as {
    issuer: string;
    gatewayKey: JWK;
    mtlsOrigin?: string;
  };

  async function form(path: string, clientId: string, fields: Record<string, string>, accept = '*/*') {
    const response = await request(`${issuer}${path}`, {
      method: 'POST',
      headers: {
        authorization: basic(clientId),
        'content-type': 'application/x-www-form-urlencoded',
        accept,
      },
      body: new URLSearchParams(fields).toString(),
    });
    return { status: response.statusCode, text: await response.body.text() };
  }

  return {
    child,
    issuer,
    gatewayKey,
    ...(mtlsOrigin === undefined ? {} : { mtlsOrigin }),
    async token(clientId, options = {}) {
      const { text } = await form('/token', clientId, {
        grant_type: 'client_credentials',
        scope: options.scope ?? 'orders:read',
        ...(options.resource === undefined ? {} : { resource: options.resource }),
      });
      const body = JSON.parse(text) as { access_token?: string };
      if (body.access_token === undefined) throw new Error(`token request failed: ${text}`);
      return body.access_token;
    },
    async revoke(clientId, token) {
      const { status, text } = await form('/token/revocation', clientId, { token });
      if (status !== 200) throw new Error(`revocation failed: ${status} ${text}`);
    },
    async introspect(clientId, token, accept) {
      const { status, text } = await form('/token/introspection', clientId, { token }, accept);
      if (status !== 200) throw new Error(`introspection failed: ${status} ${text}`);
      return text;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
