/**
 * The API keys the dashboard lists: id, owner (the customer it acts for), scopes, when it was
 * made and whether it is revoked. The store holds no secret (a key is signed, never stored),
 * and only these named fields leave it. The newest first, at most SHOWN of them, with the
 * totals, so that a store of many keys stays one small page.
 */
import type { ApiKeyRecord } from '../identity/api-key-store.ts';

export interface ApiKeyView {
  id: string;
  owner: string;
  scopes: string[];
  createdAt: string;
  /** When it was revoked (`unknown` when the store lost the time); null while it is valid. */
  revokedAt: string | null;
}

export type ApiKeysView =
  | { enabled: false }
  | { enabled: true; total: number; revoked: number; keys: ApiKeyView[] }
  /** The store did not answer (Redis down): said, not shown as "no keys". */
  | { enabled: true; error: string };

const SHOWN = 50;

export async function apiKeysView(
  list: (() => Promise<ApiKeyRecord[]> | undefined) | undefined,
): Promise<ApiKeysView> {
  const pending = list?.();
  if (pending === undefined) return { enabled: false };
  let records: ApiKeyRecord[];
  try {
    records = await pending;
  } catch (error) {
    return { enabled: true, error: error instanceof Error ? error.message : String(error) };
  }
  const newest = [...records].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  return {
    enabled: true,
    total: records.length,
    revoked: records.filter((record) => record.revokedAt !== undefined).length,
    keys: newest.slice(0, SHOWN).map((record) => ({
      id: record.id,
      owner: record.customerId,
      scopes: [...record.scopes],
      createdAt: record.createdAt,
      revokedAt: record.revokedAt ?? null,
    })),
  };
}
