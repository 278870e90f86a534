/**
 * Summarises V8 CPU profiles (`.cpuprofile`, as `node --cpu-prof` writes them) of the gateway:
 * self time as a share of busy time (idle left out), by function and by folder, counted from
 * the first request the gateway handled on, so that start-up does not dilute the figures.
 *
 *   node measure/profile-summary.ts DIR|FILE... [--top N] [--callers NAME]
 *
 * Typical input: the directory given to `BENCH_GATEWAY_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR'`
 * of `npm run bench` (docs/performance.md), one profile per gateway process; each is named by
 * what it ran (the shipped gateway or a ladder rung) and profiles that handled no request are
 * skipped. `--callers NAME` adds the time spent in functions of that name and what they call
 * (inclusive), by their caller: who pays for `writeSync`, `hash` or `writev`.
 *
 * The gateway and the ladder's rungs run as bundles (scripts/build-gateway-bundle.ts), where
 * every frame is in one file: a frame of a file with a source map beside it (`FILE.map`) is
 * told by the module and line it was bundled from.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { bundledFrom, describe, folderOf, type CallFrame } from './profile-frames.ts';
import { answerHelp, takeOption } from '../scripts/cli-args.ts';
import { checkArguments } from './summary-arguments.ts';

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A frame of this file means a request is being handled: the summary starts there. */
const REQUEST_FRAME = '/gateway/edge/request-handler.';

/** V8's pseudo-frames that are not work of the process. */
const IDLE = new Set(['(idle)', '(root)']);

const USAGE = 'usage: node measure/profile-summary.ts DIR|FILE... [--top N] [--callers NAME]';

function main(argv: string[]): void {
  answerHelp(`${USAGE}

Self time of V8 CPU profiles of the gateway (.cpuprofile files, or the directories holding them,
as BENCH_GATEWAY_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR' npm run bench writes them), as a share
of busy time from the first request on: by function (the top N, 25 by default) and by folder.
--callers NAME adds the time in functions of that name, and what they call, by their caller.`);
  const top = Number(takeOption(argv, '--top') ?? 25);
  const callersOf = takeOption(argv, '--callers');
  checkArguments('profile-summary', USAGE, argv, top);
  for (const file of argv.flatMap(profileFiles)) summarise(file, top, callersOf);
}

function profileFiles(input: string): string[] {
  if (!statSync(input).isDirectory()) return [input];
  return readdirSync(input)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort()
    .map((name) => join(input, name));
}

function summarise(file: string, top: number, callersOf: string | undefined): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  // Told by the files it ran, before the frames are mapped to the modules they came from.
  const ran = whatRan(profile);
  for (const node of profile.nodes) node.callFrame = bundledFrom(node.callFrame);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const stackOf = (id: number): CallFrame[] => {
    const frames: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at))
      frames.push(byId.get(at)!.callFrame);
    return frames;
  };
  const handlesRequests = new Map<number, boolean>();
  const inRequest = (id: number) => {
    let known = handlesRequests.get(id);
    if (known === undefined) {
      known = stackOf(id).some((frame) => frame.url.includes(REQUEST_FRAME));
      handlesRequests.set(id, known);
    }
    return known;
  };
  const first = profile.samples.findIndex(inRequest);
  if (first === -1) return;
  const bySelf = new Map<string, number>();
  const byFolder = new Map<string, number>();
  const byCaller = new Map<string, number>();
  let busy = 0;
  // Sample i lasted until sample i + 1 (timeDeltas[i + 1] µs); the last one is left out.
  for (let i = first; i + 1 < profile.samples.length; i++) {
    const frame = byId.get(profile.samples[i]!)!.callFrame;
    if (IDLE.has(frame.functionName)) continue;
    const micros = profile.timeDeltas[i + 1]!;
    busy += micros;
    add(bySelf, describe(frame), micros);
    add(byFolder, folderOf(frame), micros);
    if (callersOf !== undefined) {
      const caller = callerOf(stackOf(profile.samples[i]!), callersOf);
      if (caller !== undefined) add(byCaller, caller, micros);
    }
  }
  console.log(`\n${file}\n  ${ran}; busy ${(busy / 1e6).toFixed(2)} s from the first request on`);
  printTable('self time, share of busy time', bySelf, busy, top);
  printTable('by folder (self time)', byFolder, busy, top);
  if (callersOf !== undefined) printTable(`in ${callersOf} (inclusive), by its caller`, byCaller, busy, top);
}

/** The caller of the outermost frame named `name` in `stack` (innermost first); none without one. */
function callerOf(stack: CallFrame[], name: string): string | undefined {
  let outermost = -1;
  stack.forEach((frame, index) => {
    if (frame.functionName === name) outermost = index;
  });
  if (outermost === -1) return undefined;
  const caller = stack[outermost + 1];
  return caller === undefined ? '(none)' : describe(caller);
}

function add(totals: Map<string, number>, key: string, micros: number): void {
  totals.set(key, (totals.get(key) ?? 0) + micros);
}

function printTable(title: string, totals: Map<string, number>, busy: number, top: number): void {
  console.log(`  ${title}:`);
  const sorted = [...totals].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [key, micros] of sorted)
    console.log(`    ${((100 * micros) / busy).toFixed(1).padStart(5)}%  ${key}`);
}

/** Which gateway the profile is of: the shipped one (which checkout) or a bench ladder rung. */
function whatRan(profile: CpuProfile): string {
  const urls = new Set(profile.nodes.map((node) => node.callFrame.url));
  const ladder = [...urls].find((url) =>
    /\/(?:measure\/bench\/ladder-gateway\.ts|dist\/bench\/ladder-gateway\.bundle\.js)$/.test(url),
  );
  if (ladder !== undefined) return `ladder gateway (${checkoutOf(ladder)})`;
  const main = [...urls].find((url) => /\/gateway\/main\.(?:js|ts)$/.test(url));
  return main === undefined ? 'unknown process' : `gateway (${checkoutOf(main)})`;
}

function checkoutOf(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  return path.replace(/\/(?:dist\/)?(?:gateway|measure|bench)\/.*$/, '');
}

main(process.argv.slice(2));
