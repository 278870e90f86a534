/**
 * Deprecated routes over real sockets: `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and
 * `Link` rel="deprecation"/"sunset" on every answer of the route, refusals of later stages and
 * cache hits included, the upstream's own links kept; other routes untouched; calls counted in
 * /metrics by route, principal kind and (bounded) customer. The config's validation:
 * deprecation-config.unit.test.ts.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { Stage } from '../../../gateway/pipeline/context.ts';
import { HttpProblem } from '../../../shared/errors.ts';
import { startRecordingUpstream, startTestGateway, type TestGateway } from '../support/harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const AT = '2026-01-15T12:00:00Z';
const SUNSET = '2027-01-01';
const LINK = 'https://developer.example.com/deprecations/v1-legacy';

/** Answers with a `Link: rel="next"` of its own, cacheable for a minute. */
async function setup(authStandIn?: Stage) {
  const upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.setHeader('cache-control', 'public, max-age=60');
      res.setHeader('link', '</v1/legacy?cursor=abc>; rel="next"');
      res.end('{"data":[]}');
    });
  });
  cleanups.push(() => upstream.close());
  const gw = await startTestGateway(
    upstream.url,
    {
      routes: [
        { prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true },
        {
          prefix: '/v1/legacy',
          upstream: upstream.url,
          auth: 'none',
          cache: true,
          deprecation: { at: AT, sunset: SUNSET, link: LINK },
        },
        { prefix: '/v1/old', upstream: upstream.url, auth: 'none', deprecation: { at: '2025-06-01' } },
      ],
    },
    {},
    undefined,
    authStandIn === undefined ? {} : { stages: { authenticate: authStandIn } },
  );
  cleanups.push(() => gw.close());
  return { upstream, gw };
}

async function get(gw: TestGateway, path: string, headers: Record<string, string> = {}) {
  const response = await request(`${gw.origin}${path}`, { dispatcher: gw.agent, headers });
  await response.body.text();
  return response;
}

async function metrics(gw: TestGateway): Promise<string> {
  return (await request(`${gw.adminOrigin}/metrics`)).body.text();
}

function links(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(/,\s*(?=<)/));
}

describe('deprecation headers', () => {
  it('says when, until when and where to read, and keeps the upstream links', async () => {
    const { gw } = await setup();
    const response = await get(gw, '/v1/legacy/items');
    expect(response.statusCode).toBe(200);
    expect(response.headers['deprecation']).toBe(`@${Date.parse(AT) / 1000}`);
    expect(response.headers['deprecation']).toBe('@1768478400');
    expect(response.headers['sunset']).toBe('Fri, 01 Jan 2027 00:00:00 GMT');
    expect(links(response.headers['link'])).toEqual([
      '</v1/legacy?cursor=abc>; rel="next"',
      `<${LINK}>; rel="deprecation"`,
      `<${LINK}>; rel="sunset"`,
    ]);
  });

  it('is on cache hits too, and never stored with the response', async () => {
    const { gw, upstream } = await setup();
    await get(gw, '/v1/legacy/cached');
    const hit = await get(gw, '/v1/legacy/cached');
    expect(upstream.records).toHaveLength(1);
    expect(String(hit.headers['cache-status'])).toMatch(/hit/);
    expect(hit.headers['deprecation']).toBe('@1768478400');
    expect(links(hit.headers['link']).filter((l) => l.includes('rel="deprecation"'))).toHaveLength(1);
  });

  it('is on refusals of later stages', async () => {
    const refuse: Stage = async (ctx) => {
      await Promise.resolve();
      throw new HttpProblem('ERR_UNAUTHENTICATED', `no credentials for ${ctx.path}`);
    };
    const { gw, upstream } = await setup(refuse);
    const response = await get(gw, '/v1/legacy/items');
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.headers['deprecation']).toBe('@1768478400');
    expect(upstream.records).toHaveLength(0);
  });

  it('a date only is midnight UTC; without sunset or link only Deprecation is sent', async () => {
    const { gw } = await setup();
    const response = await get(gw, '/v1/old/x');
    expect(response.headers['deprecation']).toBe(`@${Date.parse('2025-06-01T00:00:00Z') / 1000}`);
    expect(response.headers['sunset']).toBeUndefined();
    expect(links(response.headers['link'])).toEqual(['</v1/legacy?cursor=abc>; rel="next"']);
  });

  it('leaves routes that are not deprecated alone, the longer prefix winning', async () => {
    const { gw } = await setup();
    for (const path of ['/v1/orders', '/v1/legacyish']) {
      const response = await get(gw, path);
      expect(response.headers['deprecation'], path).toBeUndefined();
      expect(response.headers['sunset'], path).toBeUndefined();
    }
  });
});

describe('deprecated calls in /metrics', () => {
  it('counts by route and principal kind, and by customer, only for deprecated routes', async () => {
    const asCustomer: Stage = async (ctx, next) => {
      const customer = ctx.req.headers['x-test-customer'];
      if (typeof customer === 'string')
        ctx.upstream.principal = {
          subject: 's',
          customerId: customer,
          scopes: [],
          authMethod: 'apikey',
          keyId: 'k',
        };
      await next();
    };
    const { gw } = await setup(asCustomer);
    await get(gw, '/v1/legacy/a', { 'x-test-customer': 'cust-1' });
    await get(gw, '/v1/legacy/b', { 'x-test-customer': 'cust-1' });
    await get(gw, '/v1/legacy/c');
    await get(gw, '/v1/orders', { 'x-test-customer': 'cust-2' });
    const text = await metrics(gw);
    expect(text).toMatch(
      /^portico_deprecated_requests_total\{route="\/v1\/legacy",principal_kind="apikey"\} 2$/m,
    );
    expect(text).toMatch(
      /^portico_deprecated_requests_total\{route="\/v1\/legacy",principal_kind="anonymous"\} 1$/m,
    );
    expect(text).toMatch(
      /^portico_deprecated_requests_by_customer_total\{route="\/v1\/legacy",customer="cust-1"\} 2$/m,
    );
    expect(text).not.toMatch(/cust-2/);
    expect(text).not.toMatch(/deprecated_requests_total\{route="\/v1",/);
  });

  it('keeps customer label values bounded: past 100 customers they count as other', async () => {
    const asCustomer: Stage = async (ctx, next) => {
      ctx.upstream.principal = {
        subject: 's',
        customerId: String(ctx.req.headers['x-test-customer']),
        scopes: [],
        authMethod: 'jwt',
      };
      await next();
    };
    const { gw } = await setup(asCustomer);
    for (let i = 0; i < 105; i++) await get(gw, '/v1/old/x', { 'x-test-customer': `c${i}` });
    const text = await metrics(gw);
    const series = text.match(/^portico_deprecated_requests_by_customer_total\{.*$/gm) ?? [];
    expect(series).toHaveLength(101);
    expect(text).toMatch(/customer="other"\} 5$/m);
  });
});
