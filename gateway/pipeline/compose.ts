/**
 * Runs the stages in order, and keeps the stage contract (context.ts): a refusal thrown by a
 * stage becomes `ctx.response` right there, so that the response side of every earlier stage
 * runs for it, as it does for an upstream answer. An error that is not a refusal is a bug: it
 * is logged and answered 500, the same way. Only a client that went away ends the chain
 * early (there is nobody left to answer).
 */
import { HttpProblem } from '../../shared/errors.ts';
import { ClientGoneError, type GatewayContext, type Next, type Stage } from './context.ts';
import { problemResponse } from './problem-response.ts';

/** A stage and the name by which a gateway's builder may replace it (tests do). */
export interface NamedStage {
  readonly name: string;
  readonly stage: Stage;
}

/** Told each stage's own time per request, in seconds: its time minus the time of next(). */
export type StageTimer = (stageIndex: number, seconds: number) => void;

export function compose(
  stages: readonly NamedStage[],
  timer?: StageTimer,
): (ctx: GatewayContext) => Promise<void> {
  return function run(ctx) {
    const clock = timer === undefined ? undefined : new StageClock(timer, stages.length);
    const dispatch = (index: number): Promise<void> => {
      const named = stages[index];
      if (named === undefined) return Promise.resolve();
      let handedOn: Promise<void> | undefined;
      const next = () => {
        if (handedOn !== undefined) return twice(named);
        handedOn = dispatch(index + 1);
        return handedOn;
      };
      clock?.started(index);
      const returned = invoke(named.stage, ctx, next);
      // What next() returned, handed back as it is (a stage with no response side): it rejects
      // only when the client is gone, which answerWithProblem passes on anyway, so such a
      // stage costs no reaction and promise of its own per request.
      if (returned === handedOn) {
        clock?.handedBack(index);
        return returned;
      }
      const onError = (error: unknown) => answerWithProblem(ctx, named.name, error);
      if (clock === undefined) return returned.catch(onError);
      // One reaction either way, as without timing: no promise is added per stage.
      return returned.then(
        () => clock.settled(index),
        (error: unknown) => {
          onError(error);
          clock.settled(index);
        },
      );
    };
    return dispatch(0);
  };
}

/**
 * Each stage's own time in one request, told to the timer. The stages nest (each awaits at
 * most one next()), so the one settling last before a stage is the one after it, whose whole
 * time is left in `laterStages` for that stage to subtract. A stage that handed next()'s
 * promise back has no time after next(): its time is told at once, and the stage below it
 * leaves its whole time, that stage's included, for the stage above to subtract.
 */
class StageClock {
  readonly #timer: StageTimer;
  readonly #stages: number;
  #laterStages = 0;
  /** By stage index: when it began, and whether it handed next() back. */
  readonly #startedAt: number[] = [];
  readonly #handedBack: boolean[] = [];

  constructor(timer: StageTimer, stages: number) {
    this.#timer = timer;
    this.#stages = stages;
  }

  started(index: number): void {
    this.#laterStages = 0;
    this.#startedAt[index] = performance.now();
    this.#handedBack[index] = false;
  }

  handedBack(index: number): void {
    this.#handedBack[index] = true;
    const now = performance.now();
    this.#timer(index, ((this.#startedAt[index + 1] ?? now) - this.#startedAt[index]!) / 1000);
    // The last stage: nothing below settles to leave its time for the stages above.
    if (index + 1 === this.#stages) this.#leaveFor(index, now);
  }

  settled(index: number): void {
    const now = performance.now();
    this.#timer(index, (now - this.#startedAt[index]! - this.#laterStages) / 1000);
    this.#leaveFor(index, now);
  }

  /** The whole time from the first of the stages that handed back right above `index`. */
  #leaveFor(index: number, now: number): void {
    let first = index;
    while (first > 0 && this.#handedBack[first - 1] === true) first--;
    this.#laterStages = now - this.#startedAt[first]!;
  }
}

function twice(named: NamedStage): Promise<void> {
  return Promise.reject(new Error(`stage ${named.name} called next() twice`));
}

/**
 * A stage's promise, or its synchronous throw as a rejection: a stage with nothing to do on the
 * way back may be a plain function returning `next()` (no async frame and promise of its own per
 * request), and may then refuse by throwing before it returns.
 */
function invoke(stage: Stage, ctx: GatewayContext, next: Next): Promise<void> {
  try {
    return stage(ctx, next);
  } catch (error) {
    // Whatever was thrown goes on as it is: answerWithProblem judges any value.
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
    return Promise.reject(error);
  }
}

function answerWithProblem(ctx: GatewayContext, stage: string, error: unknown): void {
  if (error instanceof ClientGoneError) throw error;
  let problem: HttpProblem;
  if (error instanceof HttpProblem) problem = error;
  else {
    ctx.log.error({ err: error, stage }, 'unexpected error');
    problem = new HttpProblem('ERR_INTERNAL', 'the gateway failed to handle this request');
  }
  // A stage may refuse on the way back, after the upstream answered: that answer is dropped.
  discardBody(ctx);
  ctx.response = problemResponse(problem, ctx.path);
}

function discardBody(ctx: GatewayContext): void {
  const body = ctx.response?.bufferedBody === undefined ? ctx.response?.body : null;
  if (body === undefined || body === null) return;
  body.on('error', () => {});
  body.destroy();
}
