/**
 * The breaking changes between two OpenAPI documents of one API version, as clients meet them:
 * a path or operation removed, a parameter or request field newly required, a request schema
 * that accepts less, a success response, response field or enum value removed, a response
 * field's type changed. Additions are never breaking. Paths match with their parameters
 * unnamed (`/orders/{id}` is `/orders/{order_id}`).
 */
import { compareSchemas, isObject, resolve, type Direction, type Json } from './schema-compat.ts';

export interface BreakingChange {
  /** `GET /v1/orders`, or the path alone for a removed path. */
  where: string;
  what: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const objectAt = (value: unknown, key: string): Json =>
  isObject(value) && isObject(value[key]) ? value[key] : {};
const templateOf = (path: string) => path.replace(/\{[^}]*\}/g, '{}');

export function breakingChanges(base: Json, next: Json): BreakingChange[] {
  const nextPaths = new Map(
    Object.entries(objectAt(next, 'paths')).map(([path, item]) => [templateOf(path), item]),
  );
  const changes: BreakingChange[] = [];
  for (const [path, item] of Object.entries(objectAt(base, 'paths'))) {
    const nextItem = nextPaths.get(templateOf(path));
    if (nextItem === undefined) {
      changes.push({ where: path, what: 'removed path' });
      continue;
    }
    for (const method of METHODS) {
      const operation = objectAt(item, method);
      if (!isObject((item as Json)[method])) continue;
      const where = `${method.toUpperCase()} ${path}`;
      const nextOperation = (nextItem as Json)[method];
      if (!isObject(nextOperation)) {
        changes.push({ where, what: 'removed operation' });
        continue;
      }
      const sides = {
        before: { doc: base, item: item as Json, operation },
        after: { doc: next, item: nextItem as Json, operation: nextOperation },
      };
      for (const what of [...parameters(sides), ...requestBody(sides), ...responses(sides)])
        changes.push({ where, what });
    }
  }
  return changes;
}

interface Side {
  doc: Json;
  item: Json;
  operation: Json;
}
interface Sides {
  before: Side;
  after: Side;
}

/** Path-level and operation-level parameters, by `in` and name (path parameters by position). */
function parameterMap(side: Side): Map<string, Json> {
  const map = new Map<string, Json>();
  let position = 0;
  for (const raw of [...list(side.item['parameters']), ...list(side.operation['parameters'])]) {
    const parameter = resolve(raw, side.doc);
    const key =
      parameter['in'] === 'path'
        ? `path #${position++}`
        : `${String(parameter['in'])} ${String(parameter['name'])}`;
    map.set(key, parameter);
  }
  return map;
}
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

function parameters({ before, after }: Sides): string[] {
  const found: string[] = [];
  const old = parameterMap(before);
  const now = parameterMap(after);
  // This API answers an unknown query parameter with 400: a client still sending one that was
  // removed is refused. (An unknown header is ignored, so a removed header parameter is not.)
  for (const [key, parameter] of old)
    if (parameter['in'] === 'query' && !now.has(key))
      found.push(`removed query parameter ${String(parameter['name'])}`);
  for (const [key, parameter] of now) {
    const name = `${String(parameter['in'])} parameter ${String(parameter['name'])}`;
    const was = old.get(key);
    if (parameter['required'] === true && was?.['required'] !== true) found.push(`new required ${name}`);
    if (was === undefined) continue;
    for (const change of compareSchemas(
      { schema: was['schema'], doc: before.doc },
      { schema: parameter['schema'], doc: after.doc },
      'request',
    ))
      found.push(`${name}: ${change.what}`);
  }
  return found;
}

function requestBody({ before, after }: Sides): string[] {
  const was = resolve(before.operation['requestBody'], before.doc);
  const now = resolve(after.operation['requestBody'], after.doc);
  if (Object.keys(now).length === 0) return [];
  const found: string[] = [];
  if (now['required'] === true && was['required'] !== true) found.push('request body newly required');
  found.push(
    ...content(
      objectAt(was, 'content'),
      objectAt(now, 'content'),
      'request',
      before.doc,
      after.doc,
      'request body',
    ),
  );
  return found;
}

function responses({ before, after }: Sides): string[] {
  const found: string[] = [];
  const nextResponses = objectAt(after.operation, 'responses');
  for (const [status, raw] of Object.entries(objectAt(before.operation, 'responses'))) {
    const nextRaw = nextResponses[status];
    // An error answer the API stops giving breaks no client; a success it stops giving does.
    if (nextRaw === undefined) {
      if (status.startsWith('2')) found.push(`removed response ${status}`);
      continue;
    }
    const was = objectAt({ c: resolve(raw, before.doc) }, 'c');
    const now = objectAt({ c: resolve(nextRaw, after.doc) }, 'c');
    found.push(
      ...content(
        objectAt(was, 'content'),
        objectAt(now, 'content'),
        'response',
        before.doc,
        after.doc,
        `response ${status}`,
      ),
    );
  }
  return found;
}

function content(
  was: Json,
  now: Json,
  direction: Direction,
  beforeDoc: Json,
  afterDoc: Json,
  label: string,
): string[] {
  const found: string[] = [];
  for (const [type, media] of Object.entries(was)) {
    const next = now[type];
    if (next === undefined) {
      found.push(`${label}: removed media type ${type}`);
      continue;
    }
    for (const change of compareSchemas(
      { schema: objectAt({ m: media }, 'm')['schema'], doc: beforeDoc },
      { schema: objectAt({ m: next }, 'm')['schema'], doc: afterDoc },
      direction,
    ))
      found.push(`${label} (${type}) ${change.at}: ${change.what}`);
  }
  return found;
}
