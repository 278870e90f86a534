/**
 * nginx for the field rows of `npm run bench`: Debian's package, installed by the bench when it
 * is missing (never by the tests), and one nginx per row, each a master and one worker pinned
 * to the measured CPU, in front of the static upstream with the bench's certificate.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCommand, type Placement } from './children.ts';

const BINARY = '/usr/sbin/nginx';
/** nginx-light where the release still has it (bookworm), the modular nginx where not (trixie). */
const PACKAGES = ['nginx-light', 'nginx'];

export type NginxVariant = 'plain' | 'log' | 'cache';

function aptGet(args: string[]): boolean {
  process.stderr.write(`bench: apt-get ${args.join(' ')} ...\n`);
  const result = spawnSync('apt-get', args, {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: ['ignore', 2, 2],
    timeout: 600_000,
  });
  return result.status === 0;
}

function installFirstAvailable(): boolean {
  return PACKAGES.some((name) => aptGet(['install', '-y', '--no-install-recommends', name]));
}

/** Why nginx cannot be had here, or undefined once it is installed. */
function install(): string | undefined {
  if (process.env['BENCH_NO_INSTALL'] !== undefined)
    return `${BINARY} not found, and BENCH_NO_INSTALL forbids installing it`;
  if (process.getuid?.() !== 0)
    return `${BINARY} not found; installing it needs root: apt-get install ${PACKAGES[0]}`;
  if (spawnSync('apt-get', ['--version']).status !== 0)
    return `${BINARY} not found, and no apt-get to install it`;
  // A fresh machine may have no package lists, or stale ones: refresh once before giving up.
  if (installFirstAvailable() || (aptGet(['update']) && installFirstAvailable())) return undefined;
  return `apt-get install of ${PACKAGES.join(' or ')} failed (its output is above the report)`;
}

/** nginx's binary and version, installed if needed, or why there is none. */
export function findNginx(): { binary: string; version: string } | { missing: string } {
  if (!existsSync(BINARY)) {
    const why = install();
    if (why !== undefined) return { missing: why };
  }
  const built = spawnSync(BINARY, ['-V'], { encoding: 'utf8' });
  const text = `${built.stdout}${built.stderr}`;
  if (built.status !== 0) return { missing: `${BINARY} -V failed: ${text.trim().slice(0, 200)}` };
  if (!text.includes('--with-http_ssl_module'))
    return { missing: `${BINARY} is built without the SSL module` };
  return { binary: BINARY, version: /nginx\/(\S+)/.exec(text)?.[1] ?? '?' };
}

/**
 * One row's configuration. Keep-alive both ways: to the client without nginx's default limit
 * of 1000 requests per connection (the Node rows have none, and a reconnect is a new TLS
 * handshake), to the upstream through a pool of idle connections. The log row writes nginx's
 * default combined line per request, unbuffered; the cache row stores the static answer for
 * ten minutes whatever its Cache-Control says (the upstream says private, no-cache).
 */
function config(variant: NginxVariant, dir: string, port: number, upstream: string, files: TlsFiles): string {
  const cache = variant === 'cache';
  return `user root;
daemon off;
master_process on;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log ${variant === 'log' ? join(dir, 'access.log') : 'off'};
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  upstream static {
    server ${new URL(upstream).host};
    keepalive 128;
    keepalive_requests 1000000;
  }
${cache ? `  proxy_cache_path ${join(dir, 'cache')} keys_zone=bench:1m;\n` : ''}  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${files.certFile};
    ssl_certificate_key ${files.keyFile};
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {
      proxy_pass http://static;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
${
  cache
    ? `      proxy_cache bench;
      proxy_cache_valid 200 10m;
      proxy_ignore_headers Cache-Control Expires;
      add_header Cache-Status "nginx; $upstream_cache_status";
`
    : ''
}    }
  }
}
`;
}

interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/** Starts one nginx for `variant` in its own directory under `benchDir`; resolves once spawned. */
export function startNginx(
  binary: string,
  variant: NginxVariant,
  options: { benchDir: string; placement: Placement; port: number; upstream: string; files: TlsFiles },
): ChildProcess {
  const dir = join(options.benchDir, `nginx-${variant}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, config(variant, dir, options.port, options.upstream, options.files));
  // -e: the error log before the configuration is read, instead of /var/log/nginx's.
  return startCommand(binary, ['-p', dir, '-e', join(dir, 'error.log'), '-c', file], {
    cpu: options.placement.measured,
    logFile: join(options.benchDir, `nginx-${variant}.stderr`),
  });
}
