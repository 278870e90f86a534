/**
 * Questions between a gateway worker and its primary over node:cluster's channel (GATEWAY_WORKERS):
 * each sent with an id and answered once by a message of that id. The asking side gives up after
 * a bound, so that a primary or worker that is gone or stuck cannot hold an admin request forever.
 */
import type { Worker } from 'node:cluster';

/** An answer: `value` when the work succeeded, `error` (its message) when it failed. */
export interface ChannelReply {
  type: string;
  id: number;
  value?: unknown;
  error?: string;
}

/** A message of this channel of `type` (a reply carries the question's id as well). */
const isMessage = (message: unknown, type: string): message is ChannelReply =>
  typeof message === 'object' && message !== null && (message as ChannelReply).type === type;

/**
 * Sends what `work` gives as the reply `id`. The send's callback takes the error of a channel
 * closed meanwhile (the other side gone), which would otherwise be an `error` event.
 */
function reply(
  send: (message: ChannelReply, done: () => void) => unknown,
  type: string,
  id: number,
  work: Promise<unknown>,
): void {
  const ignore = () => {};
  work.then(
    (value) => send({ type, id, value }, ignore),
    (error: Error) => send({ type, id, error: error.message }, ignore),
  );
}

/**
 * In a worker: a function that asks the primary (`request` with an id) and resolves its `reply`
 * of that id, or rejects with `silence` after `timeoutMs`.
 */
export function askPrimary<T>(
  kinds: { request: string; reply: string },
  timeoutMs: number,
  silence: string,
): () => Promise<T> {
  const waiting = new Map<number, (reply: ChannelReply) => void>();
  let next = 0;
  process.on('message', (message: unknown) => {
    if (!isMessage(message, kinds.reply)) return;
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  return () =>
    new Promise<T>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(silence));
      }, timeoutMs);
      const settle = (reply: ChannelReply) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (reply.error === undefined) resolve(reply.value as T);
        else reject(new Error(reply.error));
      };
      waiting.set(id, settle);
      // A channel closed (the primary gone) fails this question now, rather than as an `error` event.
      process.send?.({ type: kinds.request, id }, undefined, {}, (error: Error | null) => {
        if (error) settle({ type: kinds.reply, id, error: error.message });
      });
    });
}

/** In the primary: answers `worker`'s question `id` with what `work` gives. */
export function answerWorker(worker: Worker, type: string, id: number, work: Promise<unknown>): void {
  reply((message, done) => worker.send(message, done), type, id, work);
}

/** In a worker: answers each `request` of the primary with what `work` gives, as its `reply`. */
export function answerPrimary(kinds: { request: string; reply: string }, work: () => Promise<unknown>): void {
  process.on('message', (message: unknown) => {
    if (isMessage(message, kinds.request))
      reply(
        (answer, done) => process.send?.(answer, undefined, {}, done),
        kinds.reply,
        message.id,
        Promise.resolve().then(work),
      );
  });
}

/**
 * In the primary: asks `worker` (`request` with an id) and resolves its `reply` of that id, or
 * `silent` with the reason when it exits, cannot be asked, or says nothing for `timeoutMs`.
 */
export function askWorker(
  worker: Worker,
  kinds: { request: string; reply: string },
  timeoutMs: number,
): Promise<{ reply: ChannelReply } | { silent: string }> {
  const id = nextWorkerQuestion++;
  return new Promise((resolve) => {
    const done = (answer: { reply: ChannelReply } | { silent: string }) => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      resolve(answer);
    };
    const onMessage = (message: unknown) => {
      if (isMessage(message, kinds.reply) && message.id === id) done({ reply: message });
    };
    const onExit = () => done({ silent: 'exited before it answered' });
    const timer = setTimeout(
      () => done({ silent: `did not answer within ${timeoutMs / 1000} s` }),
      timeoutMs,
    );
    worker.on('message', onMessage);
    worker.once('exit', onExit);
    worker.send({ type: kinds.request, id }, (error: Error | null) => {
      if (error) done({ silent: `could not be asked: ${error.message}` });
    });
  });
}

let nextWorkerQuestion = 0;
