/**
 * The refusals of sender-constrained tokens, as RFC 9449 §7.1 and §12 and RFC 8705 §3 want
 * them: 401 with a `DPoP` challenge naming the error (`invalid_dpop_proof`, `invalid_token`,
 * `use_dpop_nonce` with a fresh `DPoP-Nonce`) and the algorithms accepted (`algs`), or a
 * `Bearer` challenge `invalid_token` for a certificate that is not the token's. Every reason
 * here is about what the client sent and can see (its own proof, its own certificate), so
 * it is told as it is; none echoes a credential.
 */
import { HttpProblem } from '../../../shared/errors.ts';

/** The realm of every challenge of the gateway (auth-problems.ts says the same). */
const REALM = 'portico';

/** RFC 6750 error_description allows %x20-21 / %x23-5B / %x5D-7E only. */
const quotable = (text: string) => text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?');

/** `DPoP algs="ES256 ..."`, plus the error when there is one. */
export function dpopChallenge(algs: readonly string[], error?: string, description?: string): string {
  const parts = [`DPoP realm="${REALM}"`, `algs="${algs.join(' ')}"`];
  if (error !== undefined) parts.push(`error="${error}"`);
  if (description !== undefined) parts.push(`error_description="${quotable(description)}"`);
  return parts.join(', ');
}

/** A proof that fails a check of RFC 9449 §4.3, is missing, or was used before. */
export function invalidProof(reason: string, algs: readonly string[]): HttpProblem {
  return new HttpProblem('ERR_INVALID_DPOP_PROOF', `The DPoP proof was refused: ${reason}.`, {
    headers: { 'www-authenticate': dpopChallenge(algs, 'invalid_dpop_proof', reason) },
  });
}

/** A token refused for its binding: not DPoP-bound, bound to another key, sent as Bearer. */
export function unboundToken(reason: string, algs: readonly string[]): HttpProblem {
  return new HttpProblem('ERR_INVALID_TOKEN', `The credential was refused: ${reason}.`, {
    headers: { 'www-authenticate': dpopChallenge(algs, 'invalid_token', reason) },
  });
}

/** The route requires a nonce the proof lacks (or holds one no longer good): here is one. */
export function useNonce(nonce: string, algs: readonly string[]): HttpProblem {
  return new HttpProblem(
    'ERR_USE_DPOP_NONCE',
    'This route requires a server nonce in the DPoP proof; retry with the one given in DPoP-Nonce.',
    {
      headers: {
        'www-authenticate': dpopChallenge(
          algs,
          'use_dpop_nonce',
          'Resource server requires nonce in DPoP proof',
        ),
        'dpop-nonce': nonce,
      },
    },
  );
}

/** A certificate-bound token without its certificate (RFC 8705 §3: 401 invalid_token). */
export function certificateMismatch(reason: string): HttpProblem {
  return new HttpProblem('ERR_INVALID_TOKEN', `The credential was refused: ${reason}.`, {
    headers: {
      'www-authenticate': `Bearer realm="${REALM}", error="invalid_token", error_description="${quotable(reason)}"`,
    },
  });
}

/** No credential on a route that takes only DPoP-bound tokens: say so in the challenge. */
export function dpopRequired(algs: readonly string[]): HttpProblem {
  return new HttpProblem(
    'ERR_UNAUTHENTICATED',
    'This endpoint requires a DPoP-bound access token with its DPoP proof.',
    {
      headers: { 'www-authenticate': dpopChallenge(algs) },
    },
  );
}

/** Whether a proof was used before cannot be told (Redis away): never "allow" (503, retry). */
export function replayUnavailable(): HttpProblem {
  return new HttpProblem(
    'ERR_SERVICE_UNAVAILABLE',
    'DPoP proofs cannot be checked right now; retry shortly.',
    {
      headers: { 'retry-after': '5' },
    },
  );
}
