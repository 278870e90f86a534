/**
 * The dashboard's page and its assets, served by the admin listener from this machine only:
 * the page, script and style beside this file (`dashboard/`, copied next to the compiled
 * output by `npm run build`; the caller names their directory), and Chart.js from node_modules.
 * A fixed table of paths, read once at start: no request names a file.
 *
 * The Content-Security-Policy allows this origin only, with no inline script or style: a
 * value the page shows (a route, a caller's id) can never run as code, and nothing is fetched
 * from elsewhere.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

export type DashboardAssets = ReadonlyMap<string, Asset>;

const JS = 'text/javascript; charset=utf-8';

function files(pageDir: URL): Record<string, [file: string, type: string]> {
  const page = fileURLToPath(pageDir);
  // chart.js exports only its entry points: its UMD build sits beside the CommonJS one.
  const chart = dirname(createRequire(import.meta.url).resolve('chart.js'));
  return {
    '/': [join(page, 'index.html'), 'text/html; charset=utf-8'],
    '/dashboard.js': [join(page, 'dashboard.js'), JS],
    '/dashboard.css': [join(page, 'dashboard.css'), 'text/css; charset=utf-8'],
    '/vendor/chart.umd.min.js': [join(chart, 'chart.umd.min.js'), JS],
  };
}

/**
 * Reads every asset now, so that a missing file stops the start, not a page view. `pageDir`: the
 * directory of the page, script and style (`admin/dashboard/` of the gateway's directory).
 */
export function loadDashboardAssets(pageDir: URL): DashboardAssets {
  return new Map(
    Object.entries(files(pageDir)).map(([path, [file, type]]) => {
      const body = readFileSync(file);
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      return [path, { body, type, etag }];
    }),
  );
}

/** Answers a GET or HEAD of one asset (304 when the client's copy is current). */
export function sendAsset(req: IncomingMessage, res: ServerResponse, asset: Asset): void {
  res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  // Revalidated on every load: a new gateway version's page never mixes with an old script.
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('ETag', asset.etag);
  if (req.headers['if-none-match'] === asset.etag) {
    res.writeHead(304).end();
    return;
  }
  res.writeHead(200, { 'Content-Type': asset.type, 'Content-Length': asset.body.length });
  res.end(req.method === 'HEAD' ? undefined : asset.body);
}
