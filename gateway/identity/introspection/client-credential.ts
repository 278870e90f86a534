/**
 * How the gateway proves who it is to the introspection endpoint (RFC 7662 §2.1 requires it):
 * `client_secret_basic` (RFC 6749 §2.3.1) or `private_key_jwt` (RFC 7523 §2.2, a short-lived
 * assertion signed per call). The secret or key is read once at start, from a file or the
 * environment, and never logged: errors name where it was looked for, never what was found.
 */
import { createPrivateKey, randomUUID, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SignJWT } from 'jose/jwt/sign';
import type { IntrospectionConfig } from '../../config/schema/introspection.ts';

export const SECRET_VARIABLE = 'PORTICO_INTROSPECTION_CLIENT_SECRET';
export const PRIVATE_KEY_VARIABLE = 'PORTICO_INTROSPECTION_PRIVATE_KEY';
/** An assertion is used once, right away: a minute covers any clock skew the IdP tolerates. */
const ASSERTION_SECONDS = 60;

/** Headers and form fields that authenticate one introspection request. */
export interface ClientProof {
  headers: Record<string, string>;
  form: Record<string, string>;
}

export type ClientCredential = () => Promise<ClientProof>;

/** The key types each assertion algorithm signs with (RFC 7518 §3, RFC 8037). */
const KEY_TYPES: Record<string, (key: KeyObject) => boolean> = {
  ES256: (key) => key.asymmetricKeyDetails?.namedCurve === 'prime256v1',
  ES384: (key) => key.asymmetricKeyDetails?.namedCurve === 'secp384r1',
  RS256: (key) => key.asymmetricKeyType === 'rsa',
  PS256: (key) => key.asymmetricKeyType === 'rsa' || key.asymmetricKeyType === 'rsa-pss',
  EdDSA: (key) => key.asymmetricKeyType === 'ed25519',
};

/** Reads the secret or key the configured method needs; throws at start when it is missing. */
export function loadClientCredential(config: IntrospectionConfig, env: NodeJS.ProcessEnv): ClientCredential {
  if (config.clientAuth === 'client_secret_basic') {
    const secret = readSecret(config.clientSecretFile, env[SECRET_VARIABLE], 'client secret');
    // RFC 6749 §2.3.1: both are form-urlencoded before they are joined and base64-encoded.
    const basic = Buffer.from(`${formEncode(config.clientId)}:${formEncode(secret)}`).toString('base64');
    const proof: ClientProof = { headers: { authorization: `Basic ${basic}` }, form: {} };
    return () => Promise.resolve(proof);
  }
  const text = readSecret(config.privateKeyFile, env[PRIVATE_KEY_VARIABLE], 'private key');
  const key = importPrivateKey(text, config.privateKeyAlgorithm);
  return async () => {
    const assertion = await new SignJWT({})
      .setProtectedHeader({
        alg: config.privateKeyAlgorithm,
        ...(config.privateKeyId === undefined ? {} : { kid: config.privateKeyId }),
      })
      .setIssuer(config.clientId)
      .setSubject(config.clientId)
      // The issuer identifier: what RFC 7523 §3 and current guidance (RFC 9700 §2.7) name.
      .setAudience(config.issuer)
      .setJti(randomUUID())
      .setIssuedAt()
      .setExpirationTime(`${ASSERTION_SECONDS}s`)
      .sign(key);
    return {
      headers: {},
      form: {
        client_id: config.clientId,
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: assertion,
      },
    };
  };
}

function readSecret(file: string | undefined, fromEnv: string | undefined, what: string): string {
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new Error(
        `auth.introspection: cannot read the ${what} file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
        { cause: error },
      );
    }
    if (text.trim() === '') throw new Error(`auth.introspection: the ${what} file ${file} is empty`);
    return text.trim();
  }
  const variable = what === 'client secret' ? SECRET_VARIABLE : PRIVATE_KEY_VARIABLE;
  if (fromEnv === undefined || fromEnv.trim() === '')
    throw new Error(`auth.introspection: the ${what} is missing: set its file in the config or ${variable}`);
  return fromEnv.trim();
}

function importPrivateKey(text: string, algorithm: string): KeyObject {
  let key: KeyObject | undefined;
  try {
    key = text.startsWith('{')
      ? createPrivateKey({ key: JSON.parse(text) as JsonWebKey, format: 'jwk' })
      : createPrivateKey(text);
  } catch {
    // Parser messages may quote the key material; say only what was expected.
  }
  if (key === undefined || !(KEY_TYPES[algorithm]?.(key) ?? false))
    throw new Error(
      `auth.introspection: the private key is not a PKCS#8 PEM or private JWK usable with ${algorithm}`,
    );
  return key;
}

function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+');
}
