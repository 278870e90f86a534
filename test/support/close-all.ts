/**
 * Closes several things at once and fails with the first failure only after every one has
 * settled: a throw or a hang in one never keeps the others (Redis nodes, say) running past the
 * test run, where they would take part in the next run's failovers.
 */
export async function closeAll(...closing: (Promise<unknown> | undefined)[]): Promise<void> {
  const results = await Promise.allSettled(closing.map((one) => one ?? Promise.resolve()));
  for (const result of results) if (result.status === 'rejected') throw result.reason;
}
