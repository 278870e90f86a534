/**
 * Adds a field name to a response's `Vary`, keeping whatever the upstream or an earlier stage
 * put there (Kong #4782 overwrote it, and caches downstream then served one origin's CORS
 * answer, or one encoding, to everyone).
 */

/** Adds `name` to `headers.vary` unless it is listed already or Vary is `*`. */
export function mergeVary(headers: Record<string, string | string[]>, name: string): void {
  const current = headers['vary'];
  if (current === undefined) {
    headers['vary'] = name;
    return;
  }
  const text = typeof current === 'string' ? current : current.join(', ');
  if (listsField(text, name)) return;
  headers['vary'] = text.trim() === '' ? name : `${text}, ${name}`;
}

/** Whether a Vary value names `name` (case-insensitive) or is `*`. */
function listsField(vary: string, name: string): boolean {
  const wanted = name.toLowerCase();
  for (const member of vary.split(',')) {
    const field = member.trim().toLowerCase();
    if (field === wanted || field === '*') return true;
  }
  return false;
}
