/**
 * Which target of a route gets the next request: among those in rotation and not full, the
 * one with the fewest requests awaiting an answer for its weight (nginx's weighted least_conn),
 * so a slow target, whose answers take longer, gets less. Ties, which is every pick on a quiet
 * route, go by smooth weighted round robin, so that the weights still share the load.
 */
import { isFull } from './circuit-breaker.ts';
import type { Member, UpstreamSet } from './upstream-set.ts';

/** The member to send to, never `exclude`; undefined when none is in rotation with room. */
export function pickMember(set: UpstreamSet, exclude?: Member): Member | undefined {
  const single = set.single;
  if (single !== undefined) return single !== exclude && available(set, single) ? single : undefined;
  let best: Member | undefined;
  let total = 0;
  for (const member of set.members) {
    if (member === exclude || !available(set, member)) continue;
    member.current += member.weight;
    total += member.weight;
    if (best === undefined || lessLoaded(member, best)) best = member;
  }
  if (best !== undefined) best.current -= total;
  return best;
}

export function available(set: UpstreamSet, member: Member): boolean {
  return !member.out && !isFull(set, member);
}

/** outstanding(a) / weight(a) < outstanding(b) / weight(b), then the larger round-robin credit. */
function lessLoaded(a: Member, b: Member): boolean {
  const left = a.target.outstanding * b.weight;
  const right = b.target.outstanding * a.weight;
  return left < right || (left === right && a.current > b.current);
}
