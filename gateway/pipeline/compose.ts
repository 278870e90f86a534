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
    // Timing: the stages nest (each awaits at most one next()), so the one settling last before
    // a stage is the one after it, whose whole time is left here for that stage to subtract.
    let laterStages = 0;
    const dispatch = (index: number): Promise<void> => {
      const named = stages[index];
      if (named === undefined) return Promise.resolve();
      let called = false;
      const next = () => {
        if (called) return Promise.reject(new Error(`stage ${named.name} called next() twice`));
        called = true;
        return dispatch(index + 1);
      };
      const onError = (error: unknown) => answerWithProblem(ctx, named.name, error);
      if (timer === undefined) return invoke(named.stage, ctx, next).catch(onError);
      // One reaction either way, as without timing: no promise is added per stage.
      laterStages = 0;
      const startedAt = performance.now();
      const settle = () => {
        const total = performance.now() - startedAt;
        timer(index, (total - laterStages) / 1000);
        laterStages = total;
      };
      return invoke(named.stage, ctx, next).then(settle, (error: unknown) => {
        onError(error);
        settle();
      });
    };
    return dispatch(0);
  };
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
