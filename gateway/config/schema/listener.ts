/** The `listener` config: the HTTPS listener every client talks to, and its HTTP/2. */
import { Type, type Static } from '@sinclair/typebox';

/** Default of `listener.limits.maxUriBytes` (its description says why this value). */
export const DEFAULT_MAX_URI_BYTES = 4096;

export const Http2ConfigSchema = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description: 'Offer `h2` by ALPN on the HTTPS port (before `http/1.1`); false: HTTP/1.1 only.',
    }),
    maxConcurrentStreams: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 100,
      description:
        'Requests one connection may have in flight (SETTINGS_MAX_CONCURRENT_STREAMS); streams past it are refused.',
    }),
    maxStreamResets: Type.Integer({
      minimum: 1,
      default: 200,
      description:
        'Streams a client may cancel (RST_STREAM) in a burst on one connection; past it, and past ' +
        '`maxStreamResets / 10` per second after, the connection is closed with GOAWAY (rapid reset, CVE-2023-44487).',
    }),
  },
  { additionalProperties: false, default: {}, description: 'HTTP/2 to clients.' },
);
export type Http2Config = Static<typeof Http2ConfigSchema>;

export const ListenerConfigSchema = Type.Object(
  {
    host: Type.Optional(
      Type.String({ description: 'Address to bind; unset binds every interface (IPv6 and IPv4).' }),
    ),
    tls: Type.Object(
      {
        certFile: Type.Optional(
          Type.String({
            minLength: 1,
            description:
              'PEM certificate chain, relative to the config file. ECDSA P-256 preferred. Unset: the ' +
              'self-signed localhost certificate of the data dir (development).',
          }),
        ),
        keyFile: Type.Optional(
          Type.String({ minLength: 1, description: 'PEM private key of certFile; set both or neither.' }),
        ),
        requestClientCertificates: Type.Boolean({
          default: false,
          description:
            'Ask clients for a certificate in the handshake, without requiring one or checking its chain: certificate-bound access tokens (RFC 8705, `cnf.x5t#S256`) are checked against the very certificate presented (self-signed ones included, RFC 8705 §2.2), and a route decides with `tokenBinding.require: certificate`. Off by default: browsers may prompt for a certificate.',
        }),
      },
      { additionalProperties: false, default: {}, description: 'Reloaded from the files on SIGHUP.' },
    ),
    hsts: Type.Object(
      {
        enabled: Type.Boolean({ default: true, description: 'Send Strict-Transport-Security.' }),
        maxAgeSeconds: Type.Integer({ minimum: 0, default: 31536000, description: 'HSTS max-age.' }),
        includeSubDomains: Type.Boolean({ default: true, description: 'HSTS includeSubDomains.' }),
        preload: Type.Boolean({
          default: false,
          description: 'HSTS preload (only once the domain is ready).',
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: 'Strict-Transport-Security on every HTTPS answer.',
      },
    ),
    httpRedirect: Type.Object(
      {
        enabled: Type.Boolean({
          default: false,
          description: 'Open a plain-HTTP listener that only redirects.',
        }),
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'Its port.' }),
        httpsPort: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: 65535,
            description: 'Port the redirect points to; unset: the HTTPS listener port.',
          }),
        ),
      },
      {
        additionalProperties: false,
        default: {},
        description: 'Plain HTTP answering 308 to HTTPS, nothing else.',
      },
    ),
    limits: Type.Object(
      {
        maxHeaderBytes: Type.Integer({
          minimum: 1024,
          default: 16384,
          description: 'Request line plus headers; beyond it the answer is 431.',
        }),
        maxUriBytes: Type.Integer({
          minimum: 256,
          default: DEFAULT_MAX_URI_BYTES,
          description:
            'Request target (path and query); beyond it the answer is 414, before anything is forwarded. ' +
            'The identity assertion binds the target by its digest, so the head the service receives is the ' +
            "client's, less its credential, plus under 2 KiB: the service takes 24 KiB (maxHeaderBytes' default plus 8 KiB).",
        }),
        maxBodyBytes: Type.Integer({
          minimum: 0,
          default: 1048576,
          description: 'Request body, counted as it streams; beyond it the answer is 413.',
        }),
        headersTimeoutMs: Type.Integer({
          minimum: 100,
          default: 10000,
          description: 'Time to receive the request headers; beyond it the answer is 408.',
        }),
        requestTimeoutMs: Type.Integer({
          minimum: 100,
          default: 30000,
          description: 'Time to receive the whole request, body included; beyond it the answer is 408.',
        }),
        keepAliveTimeoutMs: Type.Integer({
          minimum: 0,
          default: 5000,
          description: 'Idle time before a keep-alive client connection is closed.',
        }),
        maxRequestsPerConnection: Type.Integer({
          minimum: 0,
          default: 1000,
          description: 'Requests served on one connection before it is closed (0: no bound).',
        }),
        maxConnections: Type.Integer({
          minimum: 1,
          default: 10000,
          description: 'Open client connections; connections beyond it are closed at once.',
        }),
        progressTimeoutMs: Type.Integer({
          minimum: 0,
          default: 60000,
          description:
            'Time an answer may wait on a client that takes none of it (no byte moving either way), ' +
            "as nginx's send_timeout: past it the HTTP/2 stream is reset (CANCEL) or the HTTP/1.1 connection " +
            'closed, and portico_progress_timeouts_total counts it. 0: no bound.',
        }),
      },
      { additionalProperties: false, default: {}, description: 'Sizes and times, each with its answer.' },
    ),
    http2: Http2ConfigSchema,
    shutdownTimeoutMs: Type.Integer({
      minimum: 0,
      default: 25000,
      description: 'On SIGTERM, time given to in-flight requests before connections are cut.',
    }),
  },
  { additionalProperties: false, default: {}, description: 'The HTTPS listener every client talks to.' },
);
export type ListenerConfig = Static<typeof ListenerConfigSchema>;

/** Checks the schema cannot express, each `path: problem`. */
export function checkListenerConfig(config: ListenerConfig): string[] {
  const { certFile, keyFile } = config.tls;
  return (certFile === undefined) === (keyFile === undefined)
    ? []
    : ['listener.tls: set certFile and keyFile together, or neither'];
}
