/**
 * The bench's field section (issue 33): the field rows' figures, the peers that could not run
 * and why, and Portico's CPU per request against each, as the median of per-round ratios with
 * its range, each next to the issue's target.
 */
import { FIELD, type Missing } from './field.ts';
import { MAIN_GATEWAY_ROWS } from './row-choice.ts';
import {
  cells,
  HEADERS,
  median,
  perRequest,
  printGrid,
  roundRatio,
  spread,
  type RowResult,
} from './report.ts';

/** Portico's rows the ratios divide: the full pipeline on the field's static upstream, and a hit. */
const FULL = 'ladder 8';
const HIT = MAIN_GATEWAY_ROWS.hit;

const LEGEND = `  The field runs on the cost ladder's static upstream, pinned to the measured CPU like the gateway,
  with the bench's ECDSA P-256 certificate (TLS 1.3 negotiated). "full" is ladder 8 (the full pipeline
  as shipped, on the same static upstream), "hit" the gateway's cache-hit row.
  nginx rows       Debian's nginx (installed by the bench when missing; BENCH_NO_INSTALL=1 forbids it),
                   one master and one worker, keep-alive to the client (no 1000-request limit) and a pool
                   of 128 idle connections upstream; "access log on" writes the combined line, unbuffered;
                   "proxy_cache hit" stores the static answer (its no-cache ignored) and serves it.
  fastify bare     fastify 5 + @fastify/http-proxy alone: the step to the assembled row is its plugins.
  fastify          fastify 5 + jose verifying the same token (ES256, issuer, audience, typ; cached until
                   it expires) + @fastify/rate-limit per subject on Redis (ioredis) + @fastify/http-proxy
                   (undici) + fastify's pino request log (two lines per request) to a file.
  node:https rows  Node's floors: the static body answered from memory (no Node server answers a hit for
                   less), and an undici pool relaying to the static upstream (nor relays a miss for less).`;

interface Ratio {
  name: string;
  over: string;
  under: string;
  goal: string;
  met: (value: number) => boolean;
}

const RATIOS: Ratio[] = [
  {
    name: 'full ÷ fastify assembled',
    over: FULL,
    under: FIELD.fastify,
    goal: '≤ 0.75',
    met: (v) => v <= 0.75,
  },
  {
    name: 'full ÷ Node relay floor',
    over: FULL,
    under: FIELD.relayFloor,
    goal: '≤ 1.30',
    met: (v) => v <= 1.3,
  },
  {
    name: 'hit ÷ Node fixed-answer floor',
    over: HIT,
    under: FIELD.fixedFloor,
    goal: '≤ 1.30',
    met: (v) => v <= 1.3,
  },
  {
    name: 'hit ÷ nginx proxy_cache hit',
    over: HIT,
    under: FIELD.nginxHit,
    goal: '≤ 2.50',
    met: (v) => v <= 2.5,
  },
  {
    name: 'full ÷ nginx with access log',
    over: FULL,
    under: FIELD.nginxLog,
    goal: '≤ 3.50',
    met: (v) => v <= 3.5,
  },
];

function ratioLine(ratio: Ratio, results: RowResult[], missing: Missing[]): string {
  const side = (name: string) => {
    const result = results.find((each) => each.row.name.startsWith(name));
    if (result !== undefined) return { result };
    const gone = missing.find((each) => each.name === name);
    return { why: gone === undefined ? `${name}: not run (BENCH_ROWS)` : `${name}: missing: ${gone.why}` };
  };
  const [over, under] = [side(ratio.over), side(ratio.under)];
  const label = `  ${ratio.name}, CPU-µs/req:`;
  if (over.result === undefined || under.result === undefined)
    return `${label} missing (${[over.why, under.why].filter(Boolean).join('; ')})`;
  const values = roundRatio(over.result, under.result, perRequest);
  const value = median(values);
  const verdict = Number.isFinite(value) && ratio.met(value) ? 'met' : 'NOT met';
  return `${label} ${spread(values, 2)} (target ${ratio.goal}: ${verdict})`;
}

export function printField(results: RowResult[], missing: Missing[]): void {
  const field = results.filter((result) => result.row.group === 'field');
  console.log('');
  console.log('The field: nginx, a fastify-assembled gateway and Node floors on the static upstream');
  if (field.length > 0)
    printGrid(
      HEADERS,
      field.map((result) => cells(result)),
      new Set([0, 8, 9]),
    );
  for (const { name, why } of missing) console.log(`  ${name}: missing: ${why}`);
  console.log(LEGEND);
  console.log('');
  console.log('Portico against the field (median of the per-round ratios [range])');
  for (const ratio of RATIOS) console.log(ratioLine(ratio, results, missing));
}
