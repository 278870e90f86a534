/**
 * HTTP-date (RFC 9110 section 5.6.7), read strictly in form: IMF-fixdate and the two obsolete
 * forms recipients must accept. A cache reads an invalid Expires as already expired (RFC 9111
 * section 5.3), so lenient parsing (Date.parse takes almost anything) would be a bug. Only the
 * letter case of names is forgiven (`THU`, `AUG`, `gmt`), which changes no meaning.
 */
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const IMF_FIXDATE = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`,
  'i',
);
const RFC850 = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`,
  'i',
);
const ASCTIME = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`, 'i');

/** Milliseconds since the epoch, or `undefined` for anything that is not an HTTP-date. */
export function parseHttpDate(
  value: string | readonly string[] | undefined,
  now = Date.now(),
): number | undefined {
  // RFC 9111 section 4.2.1: of several values, the first is used.
  const text = (typeof value === 'string' ? value : value?.[0])?.trim();
  if (text === undefined) return undefined;
  let match = IMF_FIXDATE.exec(text);
  if (match !== null) return build(match[3], match[2], match[1], match[4], match[5], match[6]);
  match = RFC850.exec(text);
  if (match !== null) {
    // Two-digit years more than 50 years in the future are in the past century (5.6.7).
    const currentYear = new Date(now).getUTCFullYear();
    let year = 2000 + Number(match[3]);
    if (year > currentYear + 50) year -= 100;
    return build(String(year), match[2], match[1], match[4], match[5], match[6]);
  }
  match = ASCTIME.exec(text);
  if (match !== null) return build(match[6], match[1], match[2]?.trim(), match[3], match[4], match[5]);
  return undefined;
}

function build(
  year: string | undefined,
  month: string | undefined,
  day: string | undefined,
  hours: string | undefined,
  minutes: string | undefined,
  seconds: string | undefined,
): number | undefined {
  const monthIndex = MONTHS.findIndex((name) => name.toLowerCase() === month?.toLowerCase());
  const time = Date.UTC(
    Number(year),
    monthIndex,
    Number(day),
    Number(hours),
    Number(minutes),
    Number(seconds),
  );
  const check = new Date(time);
  // 31 Feb and 25:00 are not dates.
  if (
    !Number.isFinite(time) ||
    check.getUTCDate() !== Number(day) ||
    check.getUTCHours() !== Number(hours) ||
    Number(minutes) > 59 ||
    Number(seconds) > 60
  )
    return undefined;
  return time;
}

/** IMF-fixdate of a time in milliseconds. */
export function formatHttpDate(ms: number): string {
  return new Date(ms).toUTCString();
}
