/**
 * How long a start took, from the operator's command: `npm start` spends a few hundred
 * milliseconds in npm itself before this process exists, and Node's own clock
 * (`performance.now()`) starts only with this process. Under npm the parent is npm (its script
 * `exec`s node), so the parent's start time is the command's; elsewhere the process's own
 * start is the best there is, and the banner says which one it measured.
 */
import { readFileSync } from 'node:fs';

/**
 * Clock ticks per second of /proc/<pid>/stat's start times: USER_HZ, which Linux fixes at 100
 * for user space whatever the kernel's own tick rate (asking `getconf` would cost a process).
 */
const TICKS_PER_SECOND = 100;

/** Start time of a process in ticks since boot (stat(5) field 22), or undefined off Linux. */
function startTicks(pid: number | 'self'): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; fields after its closing parenthesis are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]);
    return Number.isFinite(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
}

export interface StartClock {
  /** What the elapsed time counts from, for the banner: `npm start` or `process start`. */
  origin: string;
  /** Milliseconds from that origin to now. */
  elapsedMs(): number;
}

/**
 * Counts from the npm command when this process runs under npm (npm sets npm_lifecycle_event)
 * and /proc tells when npm started; else from this process's start.
 */
export function startClock(env: NodeJS.ProcessEnv = process.env): StartClock {
  const own = performance.now.bind(performance);
  const lifecycle = env['npm_lifecycle_event'];
  if (lifecycle === undefined) return { origin: 'process start', elapsedMs: own };
  const self = startTicks('self');
  const parent = startTicks(process.ppid);
  if (self === undefined || parent === undefined || parent > self) {
    return { origin: 'process start', elapsedMs: own };
  }
  const npmMs = ((self - parent) * 1000) / TICKS_PER_SECOND;
  const origin = lifecycle === 'start' ? 'npm start' : `npm run ${lifecycle}`;
  return { origin, elapsedMs: () => npmMs + own() };
}
