/**
 * The TLS side of upstream connections: the shared policy (TLS 1.2+, AEAD suites), the CAs to
 * trust, the client certificate to present and the server name to verify, per https: origin.
 * Verification is never turned off, and an https: origin is never reached in plain HTTP.
 *
 * Certificate files are re-read when they change on disk (checked by a stat at each new
 * connection, a few microseconds against a handshake's milliseconds), so a rotation needs no
 * restart: connections already open keep their session, new ones use the new files. A set
 * that does not load (a key that does not match its certificate, a file half-written) is not
 * taken; the last good one stays until the files are whole again.
 */
import { readFileSync, statSync } from 'node:fs';
import { createSecureContext, type ConnectionOptions } from 'node:tls';
import { buildConnector, type Connector } from '../../shared/undici-parts.ts';
import { pemBundle, TLS_CLIENT_OPTIONS } from '../../shared/tls-policy.ts';
import type { UpstreamTls } from '../config/schema/upstream.ts';

/** The files' identity: any write changes a size or a modification time. */
function stamp(files: readonly string[]): string {
  return files
    .map((file) => {
      const stats = statSync(file, { throwIfNoEntry: false });
      return stats === undefined ? 'missing' : `${stats.mtimeMs}:${stats.size}`;
    })
    .join('|');
}

/** Reads and checks the files; throws naming the setting at fault. */
function readTls(settings: UpstreamTls | undefined, path: string) {
  const read = (key: 'caFile' | 'certFile' | 'keyFile') => {
    const file = settings?.[key];
    if (file === undefined) return {};
    try {
      const text = readFileSync(file, 'utf8');
      return {
        [key === 'caFile' ? 'ca' : key === 'certFile' ? 'cert' : 'key']:
          key === 'caFile' ? pemBundle(text) : text,
      };
    } catch (error) {
      throw new Error(
        `${path}.${key}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        { cause: error },
      );
    }
  };
  const pems: { ca?: string; cert?: string; key?: string } = {
    ...read('caFile'),
    ...read('certFile'),
    ...read('keyFile'),
  };
  if (pems.ca !== undefined && !pems.ca.includes('-----BEGIN CERTIFICATE-----'))
    throw new Error(`${path}.caFile: ${settings?.caFile} holds no PEM certificate`);
  try {
    createSecureContext({ ...TLS_CLIENT_OPTIONS, ...pems });
  } catch (error) {
    throw new Error(`${path}: the certificate files do not load (${(error as Error).message})`, {
      cause: error,
    });
  }
  return pems;
}

/**
 * A connector for one https: origin. `settings` absent: the system CAs, no client certificate.
 * Throws at creation when the files do not load, so a bad setting refuses the start.
 */
export function createTlsConnector(
  settings: UpstreamTls | undefined,
  options: { path: string; connectTimeoutMs: number },
): Connector {
  const files = [settings?.caFile, settings?.certFile, settings?.keyFile].filter(
    (file): file is string => file !== undefined,
  );
  const build = (): Connector =>
    buildConnector({
      ...TLS_CLIENT_OPTIONS,
      ...readTls(settings, options.path),
      ...(settings?.serverName === undefined ? {} : { servername: settings.serverName }),
      rejectUnauthorized: true,
      timeout: options.connectTimeoutMs,
      // undici offers h2 by default; the upstream hop is HTTP/1.1 keep-alive, whose framing,
      // hop-by-hop and 1xx handling the proxy (and its hostile-upstream tests) are built on.
      allowH2: false,
    });
  let current = { stamp: stamp(files), connect: build() };
  return (connectOptions, callback) => {
    const now = files.length === 0 ? current.stamp : stamp(files);
    if (now !== current.stamp) {
      try {
        current = { stamp: now, connect: build() };
      } catch {
        // Half-rotated files: keep the last good set (see the file comment).
      }
    }
    // The name verified is the configured one or the origin's host, never one a request's Host
    // header could carry in.
    const withoutName = { ...connectOptions };
    delete withoutName.servername;
    current.connect(withoutName, callback);
  };
}

/**
 * The same settings as TLS options for a client other than undici (the WebSocket relay's
 * HTTP/1.1 upgrade, gateway/websocket/): the origin's files, re-read when they change on disk
 * and kept at the last good set meanwhile, its server name, and verification always on.
 */
export function createTlsOptions(settings: UpstreamTls | undefined, path: string): () => ConnectionOptions {
  const files = [settings?.caFile, settings?.certFile, settings?.keyFile].filter(
    (file): file is string => file !== undefined,
  );
  const build = (): ConnectionOptions => ({
    ...TLS_CLIENT_OPTIONS,
    ...readTls(settings, path),
    ...(settings?.serverName === undefined ? {} : { servername: settings.serverName }),
    rejectUnauthorized: true,
  });
  let current = { stamp: stamp(files), options: build() };
  return () => {
    const now = files.length === 0 ? current.stamp : stamp(files);
    if (now !== current.stamp) {
      try {
        current = { stamp: now, options: build() };
      } catch {
        // Half-rotated files: keep the last good set (see the file comment).
      }
    }
    return current.options;
  };
}
