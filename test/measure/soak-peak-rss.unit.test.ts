/**
 * The soak's memory figures (measure/soak/report.ts): the gateway's peak RSS is its VmHWM, the
 * most it ever held at once, not a minute's median sample, and the verdict judges it against
 * issue 33's bound (< 200 MiB): a run whose medians stay low but whose peak went over fails.
 */
import { describe, expect, it } from 'vitest';
import { MUST_SEE, minuteRow, verdict, type MinuteRow } from '../../measure/soak/report.ts';
import type { ProcessSample, Sample } from '../../measure/soak/sampler.ts';
import { Tally } from '../../measure/soak/tally.ts';

/** A tally that saw every kind's main status once, and nothing unexpected. */
function coveredTally(): Tally {
  const tally = new Tally(0);
  for (const [kind, status] of MUST_SEE) tally.expected(kind, status);
  return tally;
}

function processSample(rssMiB: number, peakRssMiB: number): ProcessSample {
  return { rssMiB, peakRssMiB, fds: 40, heapAfterGcMiB: 30, majorGcs: 1, heapTotalMiB: 60 };
}

function sample(rssMiB: number, peakRssMiB: number): Sample {
  return {
    gateway: processSample(rssMiB, peakRssMiB),
    service: processSample(100, 110),
    gatewayRedisClients: 3,
    redisClients: 10,
  };
}

/** Three flat minutes whose median gateway RSS is 150 MiB. */
function flatMinutes(): MinuteRow[] {
  return [1, 2, 3].map((minute) =>
    minuteRow(
      minute,
      { requests: 100, unexpected: 0, statuses: new Map([['200', 100]]), startedAt: 0 },
      [sample(150, 160), sample(150, 170), sample(150, 165)],
      60_000,
    ),
  );
}

describe('the soak’s peak RSS', () => {
  it('takes a minute’s peak from VmHWM, the highest of its samples, beside the median RSS', () => {
    const [row] = flatMinutes();
    expect(row!.gateway.rssMiB).toBe(150);
    expect(row!.gateway.peakRssMiB).toBe(170);
  });

  it('fails the verdict when the gateway peaked at 200 MiB or more, however low the medians', () => {
    const result = verdict(flatMinutes(), coveredTally(), 212.5);
    expect(result.pass).toBe(false);
    expect(result.lines.find((line) => line.includes('peak RSS'))).toMatch(
      /peak RSS\s+FAIL\s+gateway 212\.5 MiB/,
    );
  });

  it('passes it below 200 MiB', () => {
    const result = verdict(flatMinutes(), coveredTally(), 199.9);
    expect(result.pass).toBe(true);
    expect(result.lines.find((line) => line.includes('peak RSS'))).toMatch(
      /peak RSS\s+PASS\s+gateway 199\.9 MiB/,
    );
  });
});
