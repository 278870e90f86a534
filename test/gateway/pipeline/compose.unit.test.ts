/**
 * The composer (gateway/pipeline/compose.ts) on stand-in stages, no server: stages that hand
 * next()'s promise back (no response side) still see a refusal below them become the answer
 * of every stage above, a client gone still ends the chain, and each stage's own time, told
 * once per request, excludes the stages after it whether they hand next() back or await it.
 * The clock is a stand-in, moved by the stages themselves, so the times are exact.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HttpProblem } from '../../../shared/errors.ts';
import { compose, type NamedStage } from '../../../gateway/pipeline/compose.ts';
import { ClientGoneError, type GatewayContext, type Stage } from '../../../gateway/pipeline/context.ts';

let clock = 0;
afterEach(() => {
  vi.restoreAllMocks();
});

function standInContext(): GatewayContext {
  const log = { error: () => {}, warn: () => {} };
  return { path: '/v1/orders', response: undefined, log } as unknown as GatewayContext;
}

/** Spends `before` ms, awaits next() and something more, then spends `after` ms. */
function awaiting(before: number, after: number): Stage {
  return async (_ctx, next) => {
    clock += before;
    await next();
    await Promise.resolve();
    clock += after;
  };
}

/** Spends `before` ms and hands next()'s promise back: no response side. */
function handingBack(before: number): Stage {
  return (_ctx, next) => {
    clock += before;
    return next();
  };
}

/** The terminal stage: spends `before` ms, waits, spends `after` ms, answers 200. */
function terminal(before: number, after: number): Stage {
  return async (ctx) => {
    clock += before;
    await Promise.resolve();
    clock += after;
    ctx.response = { status: 200, headers: {}, body: null };
  };
}

function named(stages: Record<string, Stage>): NamedStage[] {
  return Object.entries(stages).map(([name, stage]) => ({ name, stage }));
}

/** Runs `stages` once with a timer; each stage's time in ms, by name, in the order told. */
async function timed(stages: NamedStage[]): Promise<[string, number][]> {
  clock = 1000;
  vi.spyOn(performance, 'now').mockImplementation(() => clock);
  const told: [string, number][] = [];
  const run = compose(stages, (index, seconds) => told.push([stages[index]!.name, seconds * 1000]));
  await run(standInContext());
  return told;
}

describe('compose', () => {
  it("tells each stage's own time once, the later stages' left out, whichever kind they are", async () => {
    const told = await timed(
      named({
        outer: awaiting(1, 2),
        first: handingBack(4),
        second: handingBack(5),
        middle: awaiting(6, 7),
        third: handingBack(8),
        proxy: terminal(10, 20),
      }),
    );
    expect(Object.fromEntries(told)).toEqual({
      outer: 3,
      first: 4,
      second: 5,
      middle: 13,
      third: 8,
      proxy: 30,
    });
    expect(told).toHaveLength(6);
  });

  it('times a chain whose last stage hands next() back, with nothing below it', async () => {
    const told = await timed(named({ outer: awaiting(1, 2), last: handingBack(4) }));
    expect(Object.fromEntries(told)).toEqual({ outer: 3, last: 4 });
  });

  for (const withTimer of [false, true]) {
    const label = withTimer ? 'with a timer' : 'without one';
    it(`makes a refusal below stages that hand next() back the answer every stage above sees (${label})`, async () => {
      let seenAbove: number | undefined;
      const stages = named({
        outer: async (ctx, next) => {
          await next();
          seenAbove = ctx.response?.status;
        },
        first: handingBack(0),
        refusing: () => {
          throw new HttpProblem('ERR_FORBIDDEN', 'no');
        },
        proxy: terminal(0, 0),
      });
      const ctx = standInContext();
      await compose(stages, withTimer ? () => {} : undefined)(ctx);
      expect(seenAbove).toBe(403);
      expect(ctx.response?.status).toBe(403);
    });

    it(`ends the chain when the client is gone, through stages that hand next() back (${label})`, async () => {
      const stages = named({
        first: handingBack(0),
        proxy: () => Promise.reject(new ClientGoneError()),
      });
      await expect(compose(stages, withTimer ? () => {} : undefined)(standInContext())).rejects.toThrow(
        ClientGoneError,
      );
    });
  }
});
