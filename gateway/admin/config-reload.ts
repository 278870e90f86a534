/**
 * `POST /config/reload` on the admin listener: reloads the config file now, as SIGHUP does, and
 * answers what happened (`npm run -s reload` prints it and exits by it). It changes the
 * gateway, so only a request the admin guard lets through (purge-guard.ts: token, own Host and
 * Origin, JSON) reloads. 200 applied or unchanged, 422 refused (the running config stays),
 * 409 when the gateway runs without a config file. Under GATEWAY_WORKERS every worker reloads
 * and the answer says what each did (config/reload-summary.ts): 422 when any refused, 504 when
 * none did but one did not answer in time.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpProblem, sendProblem } from '../../shared/errors.ts';
import type { ReloadAnswer } from '../config/reload-summary.ts';

export const RELOAD_PATH = '/config/reload';

/** Handles the request when it is for the reload path; returns false otherwise. */
export function handleConfigReload(
  req: IncomingMessage,
  res: ServerResponse,
  guard: (req: IncomingMessage) => HttpProblem | undefined,
  reload: () => Promise<ReloadAnswer> | undefined,
): boolean {
  if ((req.url ?? '/').split('?', 1)[0] !== RELOAD_PATH) return false;
  req.resume();
  if (req.method !== 'POST') {
    sendProblem(
      res,
      new HttpProblem('ERR_METHOD_NOT_ALLOWED', 'the reload is a POST', { headers: { Allow: 'POST' } }),
    );
    return true;
  }
  const refused = guard(req);
  if (refused !== undefined) {
    sendProblem(res, refused);
    return true;
  }
  void answer(res, reload());
  return true;
}

/** The answer's status by outcome: a refusal anywhere is the client's file; silence is a timeout. */
const STATUS = { applied: 200, unchanged: 200, refused: 422, incomplete: 504 } as const;

async function answer(res: ServerResponse, running: Promise<ReloadAnswer> | undefined): Promise<void> {
  let result: ReloadAnswer | undefined;
  try {
    result = await running;
  } catch (error) {
    // A reload never throws by design (a failure is a refused result); a bug still gets an answer.
    sendProblem(res, new HttpProblem('ERR_INTERNAL', `the reload failed: ${(error as Error).message}`));
    return;
  }
  const status = result === undefined ? 409 : STATUS[result.outcome];
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(result ?? { outcome: 'no config file', problems: ['PORTICO_CONFIG is not set'] }));
}
