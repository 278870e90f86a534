/**
 * Where the token verifier gets the issuer's public keys: a fixed set (JWKS file, development
 * issuer) or the identity provider's JWKS URL through a small cache of our own.
 *
 * Why not jose's createRemoteJWKSet: once its cache expires and a refresh fails, verification
 * fails, so an identity-provider outage becomes a gateway outage within minutes. Here the
 * last good keys stay in use for a bounded, configured time; a token naming an unknown key id
 * triggers a refetch at most once per cooldown (rotation works, forged kids cannot hammer the
 * provider); and at most one fetch is ever in flight.
 */
import type { JSONWebKeySet, JWK, JWTVerifyGetKey } from 'jose';
import { createLocalJWKSet } from 'jose/jwks/local';
import type { Logger } from 'pino';

/** One usable key set: jose's resolver over it, and the key ids it holds. */
export interface KeySet {
  resolver: JWTVerifyGetKey;
  kids: ReadonlySet<string>;
}

export interface KeySource {
  /** Usable keys, fetching first when none are usable; `undefined` means "cannot verify now" (503). */
  current(): Promise<KeySet | undefined>;
  /** Usable keys without waiting for any fetch (the cached-token path). */
  snapshot(): KeySet | undefined;
  /** Refetches for a token naming an unknown kid, unless within the cooldown; returns the keys then usable. */
  refreshForUnknownKid(): Promise<KeySet | undefined>;
  ready(): boolean;
  close(): void;
}

/** Minimal fetch this module needs; undici's and the global fetch both fit. */
export type JwksFetch = (
  url: string,
  init: { signal: AbortSignal; headers: Record<string, string> },
) => Promise<{ ok: boolean; status: number; text(): Promise<string> }>;

/** A JWKS larger than this is not a key set; refuse rather than parse it. */
const MAX_JWKS_BYTES = 256 * 1024;
const FETCH_TIMEOUT_MS = 5000;

/**
 * Builds a key set, keeping only asymmetric public keys: a symmetric (`oct`) key in a JWKS
 * would let anyone holding the JWKS sign tokens, and private members have no business here.
 */
export function toKeySet(input: unknown): KeySet {
  if (typeof input !== 'object' || input === null || !Array.isArray((input as JSONWebKeySet).keys)) {
    throw new Error('not a JWKS: expected {"keys": [...]}');
  }
  const keys = ((input as JSONWebKeySet).keys as unknown[]).filter(
    (key): key is JWK =>
      typeof key === 'object' &&
      key !== null &&
      typeof (key as JWK).kty === 'string' &&
      (key as JWK).kty !== 'oct' &&
      (key as JWK).d === undefined,
  );
  const kids = new Set(keys.map((key) => key.kid).filter((kid): kid is string => typeof kid === 'string'));
  return { resolver: createLocalJWKSet({ keys }), kids };
}

/** Keys that never change for the life of the process (JWKS file, development issuer). */
export function createStaticKeySource(jwks: unknown): KeySource {
  const keySet = toKeySet(jwks);
  return {
    current: () => Promise.resolve(keySet),
    snapshot: () => keySet,
    refreshForUnknownKid: () => Promise.resolve(keySet),
    ready: () => true,
    close: () => {},
  };
}

export interface RemoteKeySourceOptions {
  url: string;
  fetch: JwksFetch;
  logger: Logger;
  /** Milliseconds since the epoch; injectable so tests move time instead of waiting. */
  now: () => number;
  /** Keys older than this are refreshed in the background while still used. */
  freshMs: number;
  /** How long past `freshMs` the last good keys remain usable when refreshing fails. */
  staleMaxAgeMs: number;
  /** Least time between two fetch attempts, whatever triggered them. */
  cooldownMs: number;
}

/** Keys from a JWKS URL, fetched at creation and kept as described above. */
export function createRemoteKeySource(options: RemoteKeySourceOptions): KeySource {
  const { url, fetch, logger, now, freshMs, staleMaxAgeMs, cooldownMs } = options;
  let loaded: { keySet: KeySet; fetchedAt: number } | undefined;
  let inFlight: Promise<void> | undefined;
  let lastAttemptAt = Number.NEGATIVE_INFINITY;
  const closing = new AbortController();

  async function fetchKeys(): Promise<void> {
    lastAttemptAt = now();
    try {
      const response = await fetch(url, {
        signal: AbortSignal.any([closing.signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]),
        headers: { accept: 'application/jwk-set+json, application/json' },
      });
      if (!response.ok) throw new Error(`JWKS endpoint answered ${response.status}`);
      const text = await response.text();
      if (text.length > MAX_JWKS_BYTES) throw new Error('JWKS larger than 256 KiB');
      const keySet = toKeySet(JSON.parse(text));
      const first = loaded === undefined;
      loaded = { keySet, fetchedAt: now() };
      if (first) logger.info({ jwksUrl: url, keys: keySet.kids.size }, 'JWKS loaded');
    } catch (error) {
      if (closing.signal.aborted) return;
      logger.warn(
        { jwksUrl: url, err: (error as Error).message, keptKeys: usable() !== undefined },
        'JWKS fetch failed',
      );
    }
  }

  function refresh(): Promise<void> {
    inFlight ??= fetchKeys().finally(() => (inFlight = undefined));
    return inFlight;
  }

  function usable(): KeySet | undefined {
    if (loaded === undefined || now() - loaded.fetchedAt > freshMs + staleMaxAgeMs) return undefined;
    return loaded.keySet;
  }

  const coolingDown = () => now() - lastAttemptAt < cooldownMs;

  function snapshot(): KeySet | undefined {
    // Stale-while-revalidate: due keys keep serving while one background fetch replaces them.
    if (
      loaded !== undefined &&
      now() - loaded.fetchedAt >= freshMs &&
      inFlight === undefined &&
      !coolingDown()
    ) {
      void refresh();
    }
    return usable();
  }

  void refresh();

  return {
    snapshot,
    async current() {
      const keySet = snapshot();
      if (keySet !== undefined) return keySet;
      if (inFlight !== undefined) await inFlight;
      else if (!coolingDown()) await refresh();
      return usable();
    },
    async refreshForUnknownKid() {
      if (inFlight !== undefined) await inFlight;
      else if (!coolingDown()) await refresh();
      return usable();
    },
    ready: () => usable() !== undefined,
    close: () => closing.abort(),
  };
}
