/** /v1/users/me: who the gateway says the caller is. */
import type { Polka } from 'polka';
import type { ServiceRequest } from '../app.ts';
import { parseQuery } from '../http/query.ts';
import { NO_STORE, sendJson } from '../http/respond.ts';
import { methodNotAllowed } from './method-not-allowed.ts';

export function registerUserRoutes(app: Polka<ServiceRequest>): void {
  app.get('/v1/users/me', (req, res) => {
    parseQuery(req.search ?? '', {});
    const { principal } = req;
    sendJson(res, {
      status: 200,
      body: {
        subject: principal.subject,
        customer_id: principal.customerId,
        scopes: principal.scopes,
        auth_method: principal.authMethod,
        ...(principal.keyId === undefined ? {} : { key_id: principal.keyId }),
      },
      cache: NO_STORE,
    });
  });
  methodNotAllowed(app, '/v1/users/me', ['GET', 'HEAD']);
}
