/**
 * The stage contract (gateway/pipeline/context.ts) where the compiler and the sources can say
 * it, no server: the types refuse what a stage may not do (checked by `npm run typecheck`,
 * which fails on an `@ts-expect-error` that no longer meets an error), and no stage reaches
 * into another stage's subsystem or service except through what the builder hands it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { GatewayContext } from '../../../gateway/pipeline/context.ts';

const STAGES = new URL('../../../gateway/stages/', import.meta.url).pathname;

/** The subsystems of gateway/ (layer 4 of the agreed layers). */
const SUBSYSTEMS = [
  'audit',
  'cache',
  'compression',
  'cors',
  'identity',
  'observability',
  'rate-limit',
  'routing',
  'upstream',
];

/** Each stage and the subsystems it adapts to the contract; any other is another stage's. */
const ADAPTS: Record<string, readonly string[]> = {
  // The limiter's count of failed authentications is a service of the rate-limit subsystem to
  // identity (the builder hands the limiter over); counting requests is the rate-limit stage's.
  'authenticate.ts': ['identity', 'rate-limit'],
  // upstream: the type of the forward its background revalidations go through.
  'cache.ts': ['cache', 'upstream'],
  'compress.ts': ['compression'],
  'cors.ts': ['cors'],
  'deprecation.ts': ['observability'],
  'hygiene.ts': [],
  'negotiate-encoding.ts': ['compression'],
  'own-answers.ts': [],
  'proxy.ts': ['upstream'],
  'rate-limit.ts': ['rate-limit'],
  'request-id.ts': [],
  'route.ts': ['routing'],
  'trace-context.ts': ['observability'],
  'websocket.ts': ['websocket'],
};

/** Stage files: those whose factory makes a stage. */
function stageFiles(): string[] {
  return readdirSync(STAGES).filter(
    (name) => name.endsWith('.ts') && /export function create\w+Stage\(/.test(source(name)),
  );
}

function source(name: string): string {
  return readFileSync(join(STAGES, name), 'utf8');
}

/** Each import of `text`: its specifier and whether it brings types only. */
function imports(text: string): { from: string; typeOnly: boolean }[] {
  return [...text.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)';/gms)].map((match) => ({
    from: match[2] ?? '',
    typeOnly: match[1] !== undefined,
  }));
}

describe('the stage contract, as the types and the sources state it', () => {
  it('the types refuse what a stage may not do (npm run typecheck)', () => {
    const forbidden = (ctx: GatewayContext) => {
      // @ts-expect-error the client's fields stay what it sent: edit ctx.upstream.headers
      ctx.req.headers['accept-encoding'] = 'br';
      // @ts-expect-error the client's body is not a stage's to read: it goes up as ctx.upstream.body
      ctx.req.on('data', () => {});
      // @ts-expect-error the client's response is written by the request handler alone
      ctx.res.write('early');
      // @ts-expect-error a 1xx goes through ctx.interim()
      ctx.res.writeHead(103);
      // @ts-expect-error the upstream request is edited, never replaced
      ctx.upstream = ctx.fork().upstream;
      // @ts-expect-error the body is the client's
      ctx.upstream.body = null;
      // @ts-expect-error the client's address is found once, at the edge
      ctx.upstream.clientIp = '192.0.2.1';
      // @ts-expect-error the audit facts are filled in, never replaced
      ctx.facts = {};
    };
    expect(forbidden).toBeTypeOf('function');
  });

  it('finds the stages it checks (control)', () => {
    expect(stageFiles().sort()).toEqual(Object.keys(ADAPTS).sort());
  });

  it("no stage imports another stage's subsystem", () => {
    const reaching: string[] = [];
    for (const name of stageFiles())
      for (const { from } of imports(source(name))) {
        const folder = /^\.\.\/([a-z-]+)\//.exec(from)?.[1];
        if (folder !== undefined && SUBSYSTEMS.includes(folder) && !ADAPTS[name]!.includes(folder))
          reaching.push(`${name} imports ${from}`);
      }
    expect(reaching).toEqual([]);
  });

  it("a stage takes another stage's service from the builder: it imports its types only", () => {
    const stages = new Set(stageFiles());
    const values: string[] = [];
    for (const name of stages)
      for (const { from, typeOnly } of imports(source(name)))
        if (from.startsWith('./') && stages.has(from.slice(2)) && !typeOnly)
          values.push(`${name} imports ${from}`);
    expect(values).toEqual([]);
    // Control: the CORS stage does name the rate-limit stage's gate, as a type.
    expect(imports(source('cors.ts'))).toContainEqual({ from: './rate-limit.ts', typeOnly: true });
  });
});
