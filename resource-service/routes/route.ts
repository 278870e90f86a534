/**
 * The shape of the route table: each path of the API once, with its operations, each
 * operation with its handler and its OpenAPI description. Polka's registration, the 405 and
 * OPTIONS answers (routes/register.ts) and the OpenAPI paths (api-docs/paths.ts) are all derived
 * from it, so that they cannot disagree.
 */
import type { ServerResponse } from 'node:http';
import type { ServiceRequest } from '../http/request.ts';
import type { RouteContext } from './context.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type RouteHandler = (
  req: ServiceRequest,
  res: ServerResponse,
  ctx: RouteContext,
) => Promise<void> | void;

/** An OpenAPI 3.1 Operation Object, as clients see the operation through the gateway. */
export interface OperationDoc {
  operationId: string;
  tags: string[];
  summary: string;
  description: string;
  parameters?: unknown[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
}

export interface Operation {
  method: Method;
  handle: RouteHandler;
  doc: OperationDoc;
}

export interface Resource {
  /** An OpenAPI path template, such as `/v1/orders/{id}`; its `{name}` is `req.params[name]`. */
  path: string;
  /** OpenAPI parameters every operation of the path shares: its path parameters. */
  parameters?: unknown[];
  operations: readonly Operation[];
}
