/**
 * The service's half of answer binding (issue 31, item 4): every answer echoes the
 * Portico-Exchange-Id of its request, refusals and errors included, so that the gateway can
 * tell the answer to its request from a stray one (gateway/upstream/answer-binding.ts). And the
 * two together: a gateway binding the service's answers serves them, without the field.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../gateway/support/harness.ts';
import { rawRequest, startTestService, type TestService } from '../support/service.ts';

let service: TestService;
let gw: TestGateway;
let agent: Agent;
beforeAll(async () => {
  service = await startTestService();
  gw = await startTestGateway(service.url, {
    routes: [{ prefix: '/v1', upstream: service.url, auth: 'none' }],
    rateLimits: { policies: [] },
    proxy: { echoingOrigins: [service.url] },
  });
  agent = new Agent({ connect: { ca: gw.certificate.cert, servername: 'localhost' } });
});
afterAll(async () => {
  await agent?.close();
  await gw?.close();
  await service?.close();
});

it.each([
  ['an answer', 'GET', '/v1/orders', 200],
  ['a refused assertion', 'GET', '/v1/orders', 401],
  ['a path served nowhere', 'GET', '/v1/nowhere', 404],
  ['another spelling of a path', 'GET', '/v1//orders', 404],
])('echoes the exchange id on %s', async (_name, method, path, status) => {
  const client = service.newCustomer('exchange');
  const headers = { 'portico-exchange-id': `test.${status}` };
  const res =
    status === 401
      ? await rawRequest(service.url, method, path, { headers, assertion: null })
      : await client.request(method, path, { headers });
  expect(res.status).toBe(status);
  expect(res.headers.get('portico-exchange-id')).toBe(`test.${status}`);
});

it('echoes nothing that is not an exchange id', async () => {
  const res = await service.newCustomer('exchange').request('GET', '/v1/orders', {
    headers: { 'portico-exchange-id': 'a b<script>' },
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('portico-exchange-id')).toBeNull();
});

it('a gateway that binds the service answers serves its answers, without the field', async () => {
  // auth: none, so the service refuses for want of an assertion: a 401 problem, echoed and
  // relayed as the service's answer, not a 502 of the gateway's.
  const res = await request(`${gw.origin}/v1/orders`, { dispatcher: agent });
  const body = (await res.body.json()) as { code?: string };
  expect(res.statusCode).toBe(401);
  expect(body.code).toBe('ERR_INVALID_ASSERTION');
  expect(res.headers['portico-exchange-id']).toBeUndefined();
  const docs = await request(`${gw.origin}/v1/openapi.json`, { dispatcher: agent });
  await docs.body.dump();
  expect(docs.statusCode).toBe(200);
});
