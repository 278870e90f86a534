/**
 * Strict query-string parsing for list endpoints: unknown, repeated or malformed parameters
 * are refused with 400 naming each one, never ignored.
 */
import { HttpProblem } from '../../shared/errors.ts';
import type { ProblemFieldError } from '../../shared/errors.ts';

export type ParameterParser<T> = (raw: string) => T | { error: string };

export type ParsedQuery<S extends Record<string, ParameterParser<unknown>>> = {
  [K in keyof S]?: Exclude<ReturnType<S[K]>, { error: string }>;
};

function isError(value: unknown): value is { error: string } {
  return typeof value === 'object' && value !== null && 'error' in value;
}

export function parseQuery<S extends Record<string, ParameterParser<unknown>>>(
  search: string,
  spec: S,
): ParsedQuery<S> {
  const params = new URLSearchParams(search);
  const errors: ProblemFieldError[] = [];
  const seen = new Set<string>();
  const result: Record<string, unknown> = {};
  for (const [name, raw] of params) {
    const parser = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (parser === undefined) {
      errors.push({ parameter: name, detail: `unknown parameter; allowed: ${Object.keys(spec).join(', ')}` });
      continue;
    }
    if (seen.has(name)) {
      errors.push({ parameter: name, detail: 'given more than once' });
      continue;
    }
    seen.add(name);
    const value = parser(raw);
    if (isError(value)) errors.push({ parameter: name, detail: value.error });
    else result[name] = value;
  }
  if (errors.length > 0) {
    throw new HttpProblem(
      'ERR_INVALID_PARAMETER',
      errors.length === 1
        ? `${errors[0]?.parameter}: ${errors[0]?.detail}`
        : `${errors.length} parameters are invalid`,
      { extensions: { errors } },
    );
  }
  return result as ParsedQuery<S>;
}

export const integerBetween =
  (min: number, max: number): ParameterParser<number> =>
  (raw) =>
    /^\d{1,6}$/.test(raw) && Number(raw) >= min && Number(raw) <= max
      ? Number(raw)
      : { error: `must be a whole number from ${min} to ${max}` };

export const oneOf =
  <T extends string>(values: readonly T[]): ParameterParser<T> =>
  (raw) =>
    (values as readonly string[]).includes(raw)
      ? (raw as T)
      : { error: `must be one of ${values.join(', ')}` };

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/i;
const TIMESTAMP_FORMAT = 'must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z';
/**
 * The instants a parameter may name: PostgreSQL has no year 0 and JavaScript writes years past
 * 9999 in a form it does not read, so an offset that carries 0001-01-01 or 9999-12-31 across
 * either edge would otherwise reach the database and fail there (a 500, not the client's 400).
 */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

/** True when the fields name a real calendar day and clock time (no 30 February, no 24:00). */
function fieldsExist(match: RegExpExecArray): boolean {
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, offsetHours = 0, offsetMinutes = 0] =
    match.slice(1).map((field) => Number(field ?? 0));
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return (
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59 &&
    offsetHours <= 23 &&
    offsetMinutes <= 59
  );
}

export const timestamp: ParameterParser<Date> = (raw) => {
  const match = RFC3339.exec(raw);
  const date = new Date(raw);
  if (match === null || !fieldsExist(match) || Number.isNaN(date.getTime())) {
    return { error: TIMESTAMP_FORMAT };
  }
  if (date.getTime() < EARLIEST || date.getTime() > LATEST) {
    return { error: 'must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z' };
  }
  return date;
};

export const text =
  (pattern: RegExp, description: string): ParameterParser<string> =>
  (raw) =>
    pattern.test(raw) ? raw : { error: description };
