/**
 * Which target of a route gets the next request: among those in rotation and not full, the
 * one with the fewest requests awaiting an answer for its weight (nginx's weighted least_conn),
 * so a slow target, whose answers take longer, gets less. Ties, which is every pick on a quiet
 * route, go by smooth weighted round robin, so that the weights still share the load.
 *
 * Only the tied targets take part in the round robin: a target that lost on outstanding
 * requests earns no credit. Crediting every target on every pick let a slow one, avoided
 * through a burst, bank one credit per pick and then win every quiet pick that followed
 * (40 of 40 after a burst, with 2 s answers).
 */
import { isFull } from './circuit-breaker.ts';
import type { Member, UpstreamSet } from './upstream-set.ts';

/** The member to send to, never `exclude`; undefined when none is in rotation with room. */
export function pickMember(set: UpstreamSet, exclude?: Member): Member | undefined {
  const single = set.single;
  if (single !== undefined) return single !== exclude && available(set, single) ? single : undefined;
  let least: Member | undefined;
  for (const member of set.members) {
    if (member === exclude || !available(set, member)) continue;
    if (least === undefined || compareLoad(member, least) < 0) least = member;
  }
  if (least === undefined) return undefined;
  return roundRobinAmongTies(set, least, exclude);
}

export function available(set: UpstreamSet, member: Member): boolean {
  return !member.out && !isFull(set, member);
}

/** Smooth weighted round robin over the members as loaded as `least`, the only ones credited. */
function roundRobinAmongTies(set: UpstreamSet, least: Member, exclude?: Member): Member {
  let best: Member | undefined;
  let total = 0;
  for (const member of set.members) {
    if (member === exclude || !available(set, member) || compareLoad(member, least) !== 0) continue;
    member.current += member.weight;
    total += member.weight;
    if (best === undefined || member.current > best.current) best = member;
  }
  // `least` itself is always among the ties, so best is set.
  const chosen = best ?? least;
  chosen.current -= total;
  return chosen;
}

/** The sign of outstanding(a) / weight(a) − outstanding(b) / weight(b), without division. */
function compareLoad(a: Member, b: Member): number {
  return a.target.outstanding * b.weight - b.target.outstanding * a.weight;
}
