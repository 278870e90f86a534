/**
 * The tour's rate-limit line: a loop of requests whose answers are counted by `uniq -c`, and
 * a comment such as "some 200s, then 429s (600 a minute, counted since the start of the
 * tour)". The statuses printed must be the ones named; when the whole tour ran within one
 * window, the 200s must be exactly the limit less the requests the tour made before the
 * loop with the same token. (A machine too slow for that opens a second window, where only
 * the statuses can be held to the comment.)
 */
import type { TourStep } from './tour-block.ts';

const WINDOW_MS = 60_000;

export function checkCounts(
  step: TourStep,
  output: string,
  countedBefore: number,
  elapsedMs: number,
): string[] {
  const counts = new Map<string, number>();
  for (const [, count, status] of output.matchAll(/^\s*(\d+) (\d{3})\s*$/gm))
    counts.set(status!, Number(count));
  const named = [...step.expected.matchAll(/\b(\d{3})s\b/g)].map((match) => match[1]!);
  const printed = [...counts.keys()];
  const problems: string[] = [];
  if (named.length === 0 || printed.sort().join() !== [...named].sort().join())
    problems.push(`printed ${JSON.stringify(output.trim())}, not ${named.join(' and ')}`);
  const requests = Number(/seq 1 (\d+)/.exec(step.command)?.[1]);
  const total = printed.reduce((sum, status) => sum + (counts.get(status) ?? 0), 0);
  if (total !== requests) problems.push(`counted ${total} answers of ${requests} requests`);
  const limit = Number(/(\d+) a minute/.exec(step.expected)?.[1]);
  if (Number.isNaN(limit)) problems.push(`no "N a minute" in ${step.expected}`);
  else if (elapsedMs < WINDOW_MS && counts.get('200') !== limit - countedBefore)
    problems.push(`${counts.get('200')} answered 200, not ${limit} less the tour's ${countedBefore} before`);
  return problems;
}
