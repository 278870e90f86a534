/**
 * Summarises the heap profiles `BENCH_HEAP_SAMPLE=DIR npm run bench` writes, one per gateway
 * row and round (measure/bench/heap-sampler.ts): what the gateway allocated while the row's
 * load ran, freed or not, as a share of the total and in KiB per request when given
 * `--requests N`. Two tables: by the allocating function itself, and by the innermost function
 * of the product (gateway/, shared/) on the allocation's stack, which puts what Node and the
 * packages allocate for a stage (a promise of an async function, a Buffer of a write) on the
 * stage.
 *
 *   node measure/heap-summary.ts FILE... [--top N] [--requests N]
 */
import { readFileSync } from 'node:fs';
import { bundledFrom, describe, shortUrl, type CallFrame } from './profile-frames.ts';
import { answerHelp, takeOption } from '../scripts/cli-args.ts';
import { checkArguments } from './summary-arguments.ts';

interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

const PRODUCT = /^(?:gateway|shared)\//;

const USAGE = 'usage: node measure/heap-summary.ts FILE... [--top N] [--requests N]';

function main(argv: string[]): void {
  answerHelp(`${USAGE}

What a gateway allocated while a bench row's load ran (the .heapprofile files that
BENCH_HEAP_SAMPLE=DIR npm run bench writes), freed or not, as a share of the total, and in KiB
per request with --requests N: by the allocating function and by the innermost product function
on its stack (the top N of each, 25 by default).`);
  const top = Number(takeOption(argv, '--top') ?? 25);
  const requests = takeOption(argv, '--requests');
  const perRequest = requests === undefined ? undefined : Number(requests);
  checkArguments('heap-summary', USAGE, argv, top, perRequest);
  for (const file of argv) summarise(file, top, perRequest);
}

function summarise(file: string, top: number, requests: number | undefined): void {
  const head = (JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode }).head;
  const bySelf = new Map<string, number>();
  const byProduct = new Map<string, number>();
  let total = 0;
  // Depth first with the innermost product frame so far: the stack is never built.
  const walk = (node: HeapNode, product: string | undefined) => {
    const frame = bundledFrom(node.callFrame);
    const name = describe(frame);
    const innermost = PRODUCT.test(shortUrl(frame.url)) ? name : product;
    if (node.selfSize > 0) {
      total += node.selfSize;
      add(bySelf, name, node.selfSize);
      add(byProduct, innermost ?? `(no product frame) ${name}`, node.selfSize);
    }
    for (const child of node.children) walk(child, innermost);
  };
  walk(head, undefined);
  const amount = (bytes: number) =>
    requests === undefined
      ? `${(bytes / 1048576).toFixed(1)} MiB`
      : `${(bytes / requests / 1024).toFixed(2)} KiB/req`;
  console.log(`\n${file}\n  allocated (sampled estimate): ${amount(total)}`);
  printTable('by allocating function', bySelf, total, top, amount);
  printTable('by innermost product function on the stack', byProduct, total, top, amount);
}

function add(totals: Map<string, number>, key: string, bytes: number): void {
  totals.set(key, (totals.get(key) ?? 0) + bytes);
}

function printTable(
  title: string,
  totals: Map<string, number>,
  total: number,
  top: number,
  amount: (bytes: number) => string,
): void {
  console.log(`  ${title}:`);
  for (const [key, bytes] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(
      `    ${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${amount(bytes).padStart(14)}  ${key}`,
    );
}

main(process.argv.slice(2));
