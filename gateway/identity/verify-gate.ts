/**
 * The failed-authentication gate as the authenticator uses it: what it is, and the refusals
 * that pass it without verifying anything.
 */
import { hash as digest } from 'node:crypto';

/**
 * Awaited before a credential that is not known good is judged: the failed-authentication
 * throttle counts it there, before any work, and throws its refusal to stop it unjudged. A
 * credential verified before (in the verified-token cache, or an API key whose signature was
 * checked) never passes it. `fingerprint` is a digest of the credential (never the credential):
 * the throttle tells by it a credential that failed before.
 */
export type VerifyGate = (fingerprint: string) => Promise<void>;

export const admitAll: VerifyGate = () => Promise.resolve();

/** A refusal that needed no verifying still passes the gate: it is a guess like any other. */
export async function judged<Outcome>(
  gate: VerifyGate,
  presented: string,
  outcome: Outcome,
): Promise<Outcome> {
  await gate(digest('sha256', presented, 'base64url'));
  return outcome;
}

/**
 * `gate`, counting the first credential it is asked about and letting the others pass: a
 * request is one guess however many of its parts are judged (token, DPoP proof, certificate).
 */
export function countedOnce(gate: VerifyGate): VerifyGate {
  let counted = false;
  return (fingerprint) => {
    if (counted) return Promise.resolve();
    counted = true;
    return gate(fingerprint);
  };
}
