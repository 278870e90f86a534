/**
 * Holds a tour command's output to what its `# →` comment says. The comment is read in the
 * README's own shorthand, by the shape of the output:
 * - a whole answer (`curl -i`) or a body: items split on ", ": `201` the status, `Name: value`
 *   a header with that value, `ETag` a header that is there, `total 2500` a JSON field of the
 *   body (of its first item for a list);
 * - a line picked by `| head -1` or `| grep`: the comment is that line (case aside);
 * in values `...` stands for anything and `<id>` for the tour's order id. A parenthesis is a
 * note about other requests, not this output, and is not checked.
 */
export interface Answer {
  status: number | undefined;
  headers: Map<string, string>;
  body: string;
}

/** A `curl -i` output's last answer (after any 100 Continue), or only a body. */
export function parseAnswer(output: string): Answer {
  if (!output.startsWith('HTTP/')) return { status: undefined, headers: new Map(), body: output };
  let rest = output;
  while (/^HTTP\/\S+ 1\d\d/.test(rest)) rest = rest.slice(rest.search(/\r?\n\r?\n/)).trimStart();
  const end = rest.search(/\r?\n\r?\n|$/);
  const [statusLine = '', ...fields] = rest.slice(0, end).split(/\r?\n/);
  const headers = new Map<string, string>();
  for (const field of fields) {
    const colon = field.indexOf(':');
    headers.set(field.slice(0, colon).trim().toLowerCase(), field.slice(colon + 1).trim());
  }
  const status = Number(/^HTTP\/\S+ (\d{3})/.exec(statusLine)?.[1]);
  return { status, headers, body: rest.slice(end).trim() };
}

const withoutNotes = (expected: string): string => expected.replace(/\s*\([^)]*\)/g, '').trim();

/** `...` matches anything, `<id>` the id (or, before it is known, captures it). */
export function valuePattern(expected: string, id: string | undefined): RegExp {
  const escaped = expected.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const source = escaped
    .replaceAll('\\.\\.\\.', '.*')
    .replaceAll('<id>', id === undefined ? '([0-9a-f-]{36})' : id);
  return new RegExp(`^${source}$`, 'i');
}

/** Splits on ", " outside <...> and quotes: `Link: <a, b>; rel="next"` stays one item. */
function items(expected: string): string[] {
  const found: string[] = [];
  let angle = 0;
  let quoted = false;
  let current = '';
  for (const [index, char] of [...expected].entries()) {
    if (char === '<') angle++;
    if (char === '>') angle--;
    if (char === '"') quoted = !quoted;
    if (char === ',' && angle === 0 && !quoted && expected[index + 1] === ' ') {
      found.push(current.trim());
      current = '';
    } else current += char;
  }
  return [...found, current.trim()].filter((item) => item !== '');
}

function jsonField(body: string, name: string): unknown {
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    if (name in parsed) return parsed[name];
    const first = Array.isArray(parsed['data']) ? (parsed['data'][0] as Record<string, unknown>) : {};
    return first?.[name];
  } catch {
    return undefined;
  }
}

/** What is wrong with one item against the answer; undefined when it holds. */
function itemProblem(item: string, answer: Answer, id: string | undefined): string | undefined {
  if (/^\d{3}$/.test(item))
    return answer.status === Number(item) ? undefined : `status ${answer.status}, not ${item}`;
  const header = /^([A-Za-z][\w-]*): (.+)$/.exec(item);
  if (header !== null) {
    const value = answer.headers.get(header[1]!.toLowerCase());
    return value !== undefined && valuePattern(header[2]!, id).test(value)
      ? undefined
      : `${header[1]}: ${value ?? '(absent)'}, not ${header[2]}`;
  }
  if (/^[A-Z][\w-]*$/.test(item))
    return answer.headers.has(item.toLowerCase()) ? undefined : `no ${item} header`;
  const field = /^(\w+) (.+)$/.exec(item);
  if (field !== null) {
    const value = jsonField(answer.body, field[1]!);
    // A string as it reads (paid), anything else as JSON (2500, true).
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    return value !== undefined && valuePattern(field[2]!, id).test(text)
      ? undefined
      : `body ${field[1]} is ${JSON.stringify(value)}, not ${field[2]}`;
  }
  return `cannot read the expectation "${item}"`;
}

/** Problems of a command's output against its comment; [] when the README is right. */
export function checkOutput(command: string, output: string, expected: string, id?: string): string[] {
  const claim = withoutNotes(expected);
  if (/\|\s*(head|grep)\b/.test(command)) {
    const pattern = new RegExp(valuePattern(claim, id).source.slice(1, -1), 'i');
    return pattern.test(output) ? [] : [`printed ${JSON.stringify(output.trim())}, not ${claim}`];
  }
  const answer = parseAnswer(output);
  return items(claim).flatMap((item) => itemProblem(item, answer, id) ?? []);
}
