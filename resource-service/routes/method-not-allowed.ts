/**
 * Registered after a path's handlers: a method nobody handled gets 405 with `Allow`, and
 * OPTIONS gets 204 with `Allow`.
 */
import type { Polka } from 'polka';
import { HttpProblem } from '../../shared/errors.ts';
import type { ServiceRequest } from '../app.ts';

export function methodNotAllowed(app: Polka<ServiceRequest>, path: string, allowed: readonly string[]): void {
  const allow = [...allowed, 'OPTIONS'].join(', ');
  app.all(path, (req, res) => {
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
