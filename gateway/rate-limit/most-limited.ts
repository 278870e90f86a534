/**
 * Which callers the rate limits refuse most, for the operators' dashboard, in bounded memory
 * whatever the number of callers: the Space-Saving algorithm (Metwally et al., 2005) keeps
 * `capacity` counters; a newcomer takes over the smallest one, inheriting its count. The true
 * heavy hitters stay listed with counts at most that inherited error above their own.
 */

export interface LimitedCaller {
  /** `jwt:<sub>`, `apikey:<key id>` or `ip:<address>`: an identifier, never a credential. */
  principal: string;
  customerId?: string;
  /** Refusals counted (an upper bound once the tracker was full: see `error`). */
  refused: number;
  /** How much of `refused` may belong to callers this entry replaced. */
  error: number;
}

export interface MostLimited {
  record(principal: string, customerId: string | undefined): void;
  top(count: number): LimitedCaller[];
}

export function createMostLimited(capacity = 64): MostLimited {
  const entries = new Map<string, LimitedCaller>();
  return {
    record(principal, customerId) {
      const known = entries.get(principal);
      if (known !== undefined) {
        known.refused += 1;
        return;
      }
      let inherited = 0;
      if (entries.size >= capacity) {
        const smallest = [...entries.values()].reduce((a, b) => (b.refused < a.refused ? b : a));
        entries.delete(smallest.principal);
        inherited = smallest.refused;
      }
      entries.set(principal, {
        principal,
        ...(customerId === undefined ? {} : { customerId }),
        refused: inherited + 1,
        error: inherited,
      });
    },
    top(count) {
      return [...entries.values()]
        .sort((a, b) => b.refused - a.refused || a.principal.localeCompare(b.principal))
        .slice(0, count)
        .map((entry) => ({ ...entry }));
    },
  };
}
