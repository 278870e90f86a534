/**
 * Store failures as the operator reads them: one line per policy per interval, with a count.
 * A Redis outage fails every request's count, and a line per request (about 1,170 per gateway
 * in 2.3 s, measured) buries everything else in the log and costs the gateway while it is
 * already degraded.
 *
 * The first failure of a policy after a quiet interval is logged at once (an outage shows
 * when it starts); the ones after it are counted, and at the end of each interval that saw
 * any, one line says how many (with the last error). An interval without failures ends the
 * episode. `close` writes what was counted and not yet said.
 */

export interface StoreFailureLog {
  report(policy: string, error: unknown): void;
  close(): void;
}

interface FailureLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

interface Episode {
  /** Failures since the last line. */
  unsaid: number;
  lastError: string;
  timer: NodeJS.Timeout;
}

/** Ten seconds: a minute-long outage is a handful of lines per policy, yet its start and end show. */
export const STORE_FAILURE_LOG_INTERVAL_MS = 10_000;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function createStoreFailureLog(
  log: FailureLogger,
  intervalMs = STORE_FAILURE_LOG_INTERVAL_MS,
): StoreFailureLog {
  const episodes = new Map<string, Episode>();

  const say = (policy: string, failures: number, error: string, message: string) =>
    log.warn({ policy, failures, intervalMs, err: { message: error } }, message);

  const endOfInterval = (policy: string) => {
    const episode = episodes.get(policy)!;
    if (episode.unsaid === 0) {
      episodes.delete(policy);
      return;
    }
    say(policy, episode.unsaid, episode.lastError, 'rate-limit store still failing');
    episode.unsaid = 0;
    episode.timer = setTimeout(endOfInterval, intervalMs, policy).unref();
  };

  return {
    report(policy, error) {
      const episode = episodes.get(policy);
      if (episode !== undefined) {
        episode.unsaid += 1;
        episode.lastError = messageOf(error);
        return;
      }
      say(policy, 1, messageOf(error), 'rate-limit store failed');
      episodes.set(policy, {
        unsaid: 0,
        lastError: messageOf(error),
        timer: setTimeout(endOfInterval, intervalMs, policy).unref(),
      });
    },
    close() {
      for (const [policy, episode] of episodes) {
        clearTimeout(episode.timer);
        if (episode.unsaid > 0)
          say(policy, episode.unsaid, episode.lastError, 'rate-limit store still failing');
      }
      episodes.clear();
    },
  };
}
