/**
 * The route table on a polka app: each operation's handler, then, per path, one answer for
 * every other method: 204 with `Allow` to OPTIONS, 405 with `Allow` to the rest.
 */
import type { Polka } from 'polka';
import { HttpProblem } from '../../shared/errors.ts';
import type { ServiceRequest } from '../http/request.ts';
import type { RouteContext } from './context.ts';
import type { Resource } from './route.ts';

/**
 * `/v1/orders/{id}` → `/^\/v1\/orders\/(?<id>[^/]+)$/`: exactly that path, case-sensitive, no
 * trailing slash. Polka's string patterns ignore case and take a trailing slash, and each such
 * alias is a second spelling that the gateway's limits and cache would key apart
 * (shared/canonical-path.ts); the service knows one spelling per resource.
 */
export function exactPattern(path: string): RegExp {
  const source = path
    .split(/(\{[^}]+\})/)
    .map((part) => {
      const name = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(part)?.[1];
      return name === undefined ? part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&') : `(?<${name}>[^/]+)`;
    })
    .join('');
  return new RegExp(`^${source}$`);
}

/** What `Allow` lists for a path: polka answers HEAD with the GET handler, and OPTIONS is ours. */
export function allowedMethods(resource: Resource): string[] {
  const methods = resource.operations.flatMap((op) => (op.method === 'GET' ? ['GET', 'HEAD'] : [op.method]));
  return [...methods, 'OPTIONS'];
}

/** Registered after a path's handlers, so that it answers only the methods none of them took. */
export function answerOtherMethods(app: Polka<ServiceRequest>, pattern: RegExp, allow: string): void {
  app.all(pattern, (req, res) => {
    if (req.method === 'OPTIONS') {
      res.statusCode = 204;
      res.setHeader('Allow', allow);
      res.setHeader('Cache-Control', 'no-store');
      res.end();
      return;
    }
    throw new HttpProblem('ERR_METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${req.path}`, {
      headers: { Allow: allow },
    });
  });
}

export function registerRoutes(
  app: Polka<ServiceRequest>,
  table: readonly Resource[],
  ctx: RouteContext,
): void {
  for (const resource of table) {
    const pattern = exactPattern(resource.path);
    for (const { method, handle } of resource.operations) {
      app.add(method, pattern, (req, res) => handle(req, res, ctx));
    }
    answerOtherMethods(app, pattern, allowedMethods(resource).join(', '));
  }
}
