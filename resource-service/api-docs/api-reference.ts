/**
 * The API reference at `/v1/docs`: Swagger UI (swagger-ui-dist, served from node_modules by
 * this service, nothing from elsewhere) rendering `/v1/openapi.json`. Public like the document
 * it renders. A fixed table of paths read once at start: no request names a file.
 *
 * Swagger UI because it renders OpenAPI 3.1 (since 5.0), ships as two plain files with no
 * runtime fetches of its own once the validator badge is off, and runs under a policy with no
 * inline script: the page below loads its start script as a file. Redoc and Scalar inject
 * their styles as <style> elements, which a self-only style-src refuses.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { HttpProblem } from '../../shared/errors.ts';
import { isNotModified } from '../http/conditional.ts';
import type { ServiceRequest } from '../http/request.ts';

export const API_REFERENCE_PATH = '/v1/docs';

/**
 * Self only. Swagger UI's stylesheet draws its icons as data: SVG images, the one source
 * beyond this origin; no script, style or connection goes anywhere else.
 */
export const API_REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Portico API reference</title>
    <link rel="icon" type="image/png" href="${API_REFERENCE_PATH}/favicon-32x32.png" />
    <link rel="stylesheet" href="${API_REFERENCE_PATH}/swagger-ui.css" />
    <script src="${API_REFERENCE_PATH}/swagger-ui-bundle.js" defer></script>
    <script src="${API_REFERENCE_PATH}/start.js" defer></script>
  </head>
  <body>
    <div id="swagger-ui"></div>
  </body>
</html>
`;

/** No validator badge (it would send the document to another host), links into operations. */
const START = `window.ui = SwaggerUIBundle({
  url: '/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  layout: 'BaseLayout',
  presets: [SwaggerUIBundle.presets.apis],
  defaultModelsExpandDepth: 0,
});
`;

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function asset(body: Buffer | string, type: string): Asset {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`;
  return { body: bytes, type, etag };
}

/** Every path the reference serves, read now: a missing package stops the start, not a page view. */
export function loadApiReference(): ReadonlyMap<string, Asset> {
  const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const file = (name: string) => readFileSync(join(dist, name));
  const js = 'text/javascript; charset=utf-8';
  return new Map([
    [API_REFERENCE_PATH, asset(PAGE, 'text/html; charset=utf-8')],
    [`${API_REFERENCE_PATH}/start.js`, asset(START, js)],
    [`${API_REFERENCE_PATH}/swagger-ui-bundle.js`, asset(file('swagger-ui-bundle.js'), js)],
    [`${API_REFERENCE_PATH}/swagger-ui.css`, asset(file('swagger-ui.css'), 'text/css; charset=utf-8')],
    [`${API_REFERENCE_PATH}/favicon-32x32.png`, asset(file('favicon-32x32.png'), 'image/png')],
  ]);
}

/**
 * Answers one path of the reference. Public and the same for everyone, so shared caches (the
 * gateway's) may keep it for five minutes, like the document; a query string it would ignore
 * is refused, as on the document, so that no one can fill a cache with copies of it.
 */
export function sendApiReference(req: ServiceRequest, res: ServerResponse, reference: Asset): void {
  if ((req.search ?? '') !== '')
    throw new HttpProblem('ERR_INVALID_PARAMETER', 'the API reference takes no query parameters');
  res.setHeader('Content-Security-Policy', API_REFERENCE_CSP);
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cache-Control', 'public, max-age=300');
  res.setHeader('ETag', reference.etag);
  if (isNotModified(req, reference.etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', reference.type);
  res.setHeader('Content-Length', reference.body.length);
  res.end(req.method === 'HEAD' ? undefined : reference.body);
}
