/**
 * Property: whatever sequence of reads, writes, origin-side changes and passing time, every
 * answer through the cache is one the origin could have given under RFC 9111's rules: the
 * current representation, or an older one that a stored response may still stand for
 * (within its freshness lifetime, plus stale-while-revalidate), and never older than the last
 * write made through the gateway on that path.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClock, startCacheGateway, type CacheGateway, type Clock } from './support/cache-gateway.ts';
import { startOrigin, type OriginRequest, type OriginReply, type TestOrigin } from './support/origin.ts';

interface Policy {
  headers: Record<string, string>;
  /** Seconds a superseded version may still be served. */
  tolerance: number;
}

const POLICIES: Policy[] = [
  { headers: { 'cache-control': 'max-age=10' }, tolerance: 10 },
  { headers: { 'cache-control': 'no-cache' }, tolerance: 0 },
  { headers: { 'cache-control': 'max-age=5, must-revalidate' }, tolerance: 5 },
  { headers: { 'cache-control': 'max-age=0, s-maxage=8' }, tolerance: 8 },
  { headers: { 'cache-control': 'max-age=4, stale-while-revalidate=6' }, tolerance: 10 },
  { headers: { 'cache-control': 'no-store' }, tolerance: 0 },
  { headers: { 'cache-control': 'private, no-cache', 'portico-cache-control': 'max-age=7' }, tolerance: 7 },
  { headers: { 'cache-control': 'max-age=6, stale-if-error=30' }, tolerance: 6 },
];
const LIST = POLICIES.length;
const LIST_POLICY: Policy = { headers: { 'cache-control': 'max-age=10' }, tolerance: 10 };

/** The origin's state: per resource (items, then the list) its versions and when each was superseded. */
class Model {
  versions: number[] = [];
  superseded: Map<number, number>[] = [];
  /** Version made by the last write through the gateway: nothing older may be served. */
  floor: number[] = [];
  private readonly clock: Clock;
  constructor(clock: Clock) {
    this.clock = clock;
    this.reset();
  }
  reset(): void {
    this.versions = Array.from({ length: LIST + 1 }, () => 1);
    this.superseded = Array.from({ length: LIST + 1 }, () => new Map());
    this.floor = Array.from({ length: LIST + 1 }, () => 0);
  }
  change(resource: number): void {
    for (const r of [resource, LIST]) {
      this.superseded[r]!.set(this.versions[r]!, this.clock.now());
      this.versions[r]!++;
    }
  }
  acceptable(resource: number, version: number): boolean {
    const policy = resource === LIST ? LIST_POLICY : POLICIES[resource]!;
    if (version < this.floor[resource]!) return false;
    if (version === this.versions[resource]) return true;
    const at = this.superseded[resource]!.get(version);
    return at !== undefined && this.clock.now() - at < policy.tolerance * 1000;
  }
}

type Command =
  | {
      kind: 'get';
      resource: number;
      query: number;
      head: boolean;
      auth: boolean;
      inm: 'none' | 'current' | 'old';
    }
  | { kind: 'patch' | 'post' | 'silent'; resource: number }
  | { kind: 'advance'; seconds: number };

/**
 * Each run works on a few resources so that reads, writes and reads of the same one meet
 * often; plain GETs without credentials dominate because they are what gets stored.
 */
function commands(resources: number[]): fc.Arbitrary<Command[]> {
  const items = resources.filter((r) => r !== LIST);
  const written = fc.constantFrom(...(items.length === 0 ? [0] : items));
  const command: fc.Arbitrary<Command> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('get' as const),
        resource: fc.constantFrom(...resources),
        query: fc.constantFrom(0, 0, 0, 1),
        head: fc.constantFrom(false, false, false, true),
        auth: fc.constantFrom(false, false, false, true),
        inm: fc.constantFrom('none' as const, 'none' as const, 'current' as const, 'old' as const),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constantFrom('patch' as const, 'post' as const), resource: written }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('silent' as const), resource: written }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('advance' as const),
        seconds: fc.integer({ min: 0, max: 12 }),
      }),
    },
  );
  return fc.array(command, { minLength: 1, maxLength: 40 });
}

const pathOf = (r: number) => (r === LIST ? '/v1/items' : `/v1/items/${r}`);
const etagOf = (r: number, version: number) => `"r${r}v${version}"`;

let clock: Clock;
let model: Model;
let origin: TestOrigin;
let gateway: CacheGateway;

function answer(request: OriginRequest): OriginReply {
  const date = clock.date();
  if (request.method === 'PATCH' || request.method === 'POST') {
    const r =
      request.method === 'POST' ? Number(request.headers['x-item']) : Number(request.path.split('/')[3]);
    model.change(r);
    return {
      status: request.method === 'POST' ? 201 : 200,
      headers: {
        date,
        'cache-control': 'no-store',
        'portico-invalidates': '</v1/items>',
        ...(request.method === 'POST' ? { location: pathOf(r) } : {}),
      },
      body: '{}',
    };
  }
  const r = request.path === '/v1/items' ? LIST : Number(request.path.split('/')[3]);
  const policy = r === LIST ? LIST_POLICY : POLICIES[r]!;
  const etag = etagOf(r, model.versions[r]!);
  const headers = { date, etag, ...policy.headers };
  if (request.headers['if-none-match'] === etag) return { status: 304, headers };
  return { headers, body: JSON.stringify({ r, v: model.versions[r] }) };
}

beforeAll(async () => {
  clock = createClock();
  model = new Model(clock);
  origin = await startOrigin(answer);
  gateway = await startCacheGateway({ upstream: origin.url, clock });
});

afterAll(async () => {
  await gateway.close();
  await origin.close();
});

async function run(commands: Command[]): Promise<void> {
  model.reset();
  gateway.cache.purge('/');
  for (const c of commands) {
    switch (c.kind) {
      case 'advance':
        clock.advance(c.seconds);
        break;
      case 'silent':
        model.change(c.resource);
        break;
      case 'patch':
      case 'post': {
        const response =
          c.kind === 'patch'
            ? await gateway.send('PATCH', pathOf(c.resource), {}, '{}')
            : await gateway.send('POST', '/v1/items', { 'x-item': String(c.resource) }, '{}');
        expect(response.status).toBeLessThan(300);
        // The writer must see its own write from now on, on the item and on the list.
        model.floor[c.resource] = model.versions[c.resource]!;
        model.floor[LIST] = model.versions[LIST]!;
        break;
      }
      case 'get': {
        const current = model.versions[c.resource]!;
        const sent = c.inm === 'current' ? current : c.inm === 'old' ? current - 1 : undefined;
        const headers: Record<string, string> = {
          ...(sent === undefined ? {} : { 'if-none-match': etagOf(c.resource, sent) }),
          ...(c.auth ? { authorization: 'Test cust-p orders:read' } : {}),
        };
        const path = `${pathOf(c.resource)}${c.query === 0 ? '' : '?page=2'}`;
        const response = await gateway.send(c.head ? 'HEAD' : 'GET', path, headers);
        expect(response.headers['portico-cache-control']).toBeUndefined();
        expect(response.headers['portico-invalidates']).toBeUndefined();
        let version: number;
        if (response.status === 304) {
          expect(sent).toBeDefined();
          version = sent!;
        } else {
          expect(response.status).toBe(200);
          const match = /^"r(\d+)v(\d+)"$/.exec(response.headers['etag'] ?? '');
          expect(match?.[1]).toBe(String(c.resource));
          version = Number(match?.[2]);
          if (!c.head) expect(JSON.parse(response.body)).toEqual({ r: c.resource, v: version });
        }
        if (!model.acceptable(c.resource, version))
          throw new Error(
            `${path} served version ${version}; origin has ${current}, floor ${model.floor[c.resource]}, ` +
              `cache-status ${response.headers['cache-status']}`,
          );
        if (/; hit/.test(response.headers['cache-status'] ?? ''))
          expect(response.headers['age']).toBeDefined();
        break;
      }
    }
  }
}

const read = (r: number): Command => ({
  kind: 'get',
  resource: r,
  query: 0,
  head: false,
  auth: false,
  inm: 'none',
});
/** Always run besides the random ones: a write through the gateway, and plain staleness. */
const EXAMPLES: [Command[]][] = [
  [[read(0), { kind: 'patch', resource: 0 }, read(0), read(LIST)]],
  [[read(0), { kind: 'silent', resource: 0 }, { kind: 'advance', seconds: 11 }, read(0)]],
];

describe('the cache against a model origin', () => {
  it('only ever answers what the origin could have answered under RFC 9111', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 0, max: LIST }), { minLength: 1, maxLength: 3 }).chain(commands),
        (sequence) => run(sequence),
      ),
      { numRuns: 60, examples: EXAMPLES },
    );
    // The runs exercised the cache, not only the origin.
    expect(gateway.cache.stats().hits).toBeGreaterThan(0);
  });
});
