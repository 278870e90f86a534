/**
 * A refusal as a response like any other: the problem document in memory, so that response
 * stages can add their headers to it and the handler writes it in one go. Errors are never
 * stored by caches (`no-store`).
 */
import { PROBLEM_CONTENT_TYPE, type HttpProblem } from '../../shared/errors.ts';
import { bufferedResponse, type GatewayResponse } from './context.ts';

export function problemResponse(problem: HttpProblem, instance: string): GatewayResponse {
  const body = Buffer.from(JSON.stringify(problem.toDocument(instance)));
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(problem.headers)) headers[name.toLowerCase()] = value;
  headers['content-type'] = PROBLEM_CONTENT_TYPE;
  headers['cache-control'] = 'no-store';
  headers['content-length'] = String(body.length);
  const response = bufferedResponse(problem.status, headers, body);
  response.problem = problem;
  return response;
}
