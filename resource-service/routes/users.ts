/** /v1/users/me: who the gateway says the caller is. */
import type { ServerResponse } from 'node:http';
import { parseQuery } from '../http/query.ts';
import type { ServiceRequest } from '../http/request.ts';
import { NO_STORE, sendJson } from '../http/respond.ts';
import { badRequest, common, json, ref, WRITE_HEADERS } from '../openapi/components.ts';
import type { OperationDoc, Resource } from './route.ts';

function getCurrentUser(req: ServiceRequest, res: ServerResponse): void {
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
}

const getCurrentUserDoc: OperationDoc = {
  operationId: 'getCurrentUser',
  tags: ['users'],
  summary: 'Who the caller is',
  description: 'The principal the gateway verified: subject, customer, scopes and how it authenticated.',
  responses: {
    '200': json('The authenticated principal.', ref('User'), WRITE_HEADERS),
    '400': badRequest(),
    ...common,
  },
};

export const USER_ROUTES: readonly Resource[] = [
  {
    path: '/v1/users/me',
    operations: [{ method: 'GET', handle: getCurrentUser, doc: getCurrentUserDoc }],
  },
];
