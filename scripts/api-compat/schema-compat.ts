/**
 * Compares two JSON Schemas (OpenAPI 3.1, and 3.0's `nullable`) the way a client is affected:
 * what it sends (a request schema may not accept less than before) and what it reads (a
 * response schema may not drop a field, an enum value, or change a field's type). Additions
 * are never breaking. `$ref`s are resolved against each schema's own document.
 */

export type Json = Record<string, unknown>;
export type Direction = 'request' | 'response';

export interface SchemaSide {
  schema: unknown;
  /** The document `$ref`s resolve in. */
  doc: Json;
}

/** One breaking change: where (a readable path inside the schema) and what. */
export interface SchemaBreak {
  at: string;
  what: string;
}

export const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Follows local `$ref`s (`#/components/schemas/X`), merging `allOf` members into one object. */
export function resolve(schema: unknown, doc: Json, seen = new Set<string>()): Json {
  if (!isObject(schema)) return {};
  const ref = schema['$ref'];
  if (typeof ref === 'string') {
    if (seen.has(ref) || !ref.startsWith('#/')) return {};
    const target = ref
      .slice(2)
      .split('/')
      .reduce<unknown>(
        (node, key) => (isObject(node) ? node[key.replaceAll('~1', '/').replaceAll('~0', '~')] : undefined),
        doc,
      );
    const siblings = withoutKey(schema, '$ref');
    return { ...resolve(target, doc, new Set([...seen, ref])), ...siblings };
  }
  const allOf = schema['allOf'];
  if (!Array.isArray(allOf)) return schema;
  const rest = withoutKey(schema, 'allOf');
  return allOf.reduce<Json>((merged, member) => {
    const part = resolve(member, doc, seen);
    return {
      ...merged,
      ...part,
      properties: { ...(merged['properties'] as Json), ...(part['properties'] as Json) },
      required: [...strings(merged['required']), ...strings(part['required'])],
    };
  }, rest);
}

function withoutKey(object: Json, key: string): Json {
  const copy = { ...object };
  delete copy[key];
  return copy;
}

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];

/** The JSON types a schema admits; undefined when it admits any. */
function types(schema: Json, doc: Json): Set<string> | undefined {
  const type = schema['type'];
  const list = typeof type === 'string' ? [type] : strings(type);
  if (list.length === 0) return alternativeTypes(schema, doc);
  if (schema['nullable'] === true) list.push('null');
  return new Set(list);
}

/** `anyOf`/`oneOf` of typed schemas (`[string, null]`, say) admit the union of their types. */
function alternativeTypes(schema: Json, doc: Json): Set<string> | undefined {
  const branches = alternatives(schema);
  if (branches.length === 0) return undefined;
  const union = new Set<string>();
  for (const branch of branches) {
    const admitted = types(resolve(branch, doc), doc);
    if (admitted === undefined) return undefined;
    for (const type of admitted) union.add(type);
  }
  return union;
}

const alternatives = (schema: Json): unknown[] => {
  const branches = schema['anyOf'] ?? schema['oneOf'];
  return Array.isArray(branches) ? branches : [];
};

/** Whether every type `inner` admits is admitted by `outer` (integer is a number). */
function within(inner: Set<string> | undefined, outer: Set<string> | undefined): boolean {
  if (outer === undefined) return true;
  if (inner === undefined) return false;
  return [...inner].every((t) => outer.has(t) || (t === 'integer' && outer.has('number')));
}

const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'] as const;
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'] as const;

/** Request side: bounds, pattern and format that accept less than before. */
function narrowedBounds(before: Json, after: Json): string[] {
  const found: string[] = [];
  const num = (schema: Json, key: string) => (typeof schema[key] === 'number' ? schema[key] : undefined);
  for (const key of LOWER_BOUNDS) {
    const [b, a] = [num(before, key), num(after, key)];
    if (a !== undefined && (b === undefined || a > b)) found.push(`${key} raised to ${a}`);
  }
  for (const key of UPPER_BOUNDS) {
    const [b, a] = [num(before, key), num(after, key)];
    if (a !== undefined && (b === undefined || a < b)) found.push(`${key} lowered to ${a}`);
  }
  if (after['pattern'] !== undefined && after['pattern'] !== before['pattern'])
    found.push(`pattern ${before['pattern'] === undefined ? 'added' : 'changed'}`);
  return found;
}

const child = (at: string, key: string) => (at === '' ? key : `${at}.${key}`);

/** Every breaking difference from `before` to `after` for a client on the `direction` side. */
export function compareSchemas(
  before: SchemaSide,
  after: SchemaSide,
  direction: Direction,
  at = '',
): SchemaBreak[] {
  return walk(before, after, direction, at, new Set());
}

function walk(
  before: SchemaSide,
  after: SchemaSide,
  direction: Direction,
  at: string,
  seen: Set<string>,
): SchemaBreak[] {
  // Recursive schemas: one visit per pair of references is enough.
  const key = `${JSON.stringify(before.schema)}|${JSON.stringify(after.schema)}|${at.split('.').length}`;
  if (seen.has(key) || at.split('.').length > 32) return [];
  seen.add(key);
  const b = resolve(before.schema, before.doc);
  const a = resolve(after.schema, after.doc);
  const breaks: SchemaBreak[] = [];
  const add = (what: string) => breaks.push({ at: at === '' ? '(body)' : at, what });

  const [bTypes, aTypes] = [types(b, before.doc), types(a, after.doc)];
  if (direction === 'request' ? !within(bTypes, aTypes) : !within(aTypes, bTypes))
    add(
      `${direction === 'request' ? 'narrowed' : 'changed'} type: ${describe(bTypes)} → ${describe(aTypes)}`,
    );

  const [bEnum, aEnum] = [b['enum'], a['enum']];
  if (Array.isArray(aEnum)) {
    const removed = Array.isArray(bEnum) ? bEnum.filter((v) => !aEnum.some((w) => same(v, w))) : undefined;
    if (removed === undefined) {
      if (direction === 'request')
        add(`narrowed to the values ${aEnum.map((v) => JSON.stringify(v)).join(', ')}`);
    } else if (removed.length > 0)
      add(`removed enum value ${removed.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  if (direction === 'request') for (const what of narrowedBounds(b, a)) add(`narrowed: ${what}`);

  breaks.push(...properties(before, after, b, a, direction, at, seen));
  // Alternatives in the same order are compared one by one (what each branch holds).
  const [bBranches, aBranches] = [alternatives(b), alternatives(a)];
  if (bBranches.length > 0 && bBranches.length === aBranches.length)
    bBranches.forEach((branch, i) =>
      breaks.push(
        ...walk({ ...before, schema: branch }, { ...after, schema: aBranches[i] }, direction, at, seen),
      ),
    );
  if (b['items'] !== undefined && a['items'] !== undefined)
    breaks.push(
      ...walk(
        { ...before, schema: b['items'] },
        { ...after, schema: a['items'] },
        direction,
        `${at}[]`,
        seen,
      ),
    );
  return breaks;
}

function properties(
  before: SchemaSide,
  after: SchemaSide,
  b: Json,
  a: Json,
  direction: Direction,
  at: string,
  seen: Set<string>,
): SchemaBreak[] {
  const breaks: SchemaBreak[] = [];
  const bProps = isObject(b['properties']) ? b['properties'] : {};
  const aProps = isObject(a['properties']) ? a['properties'] : {};
  const [bRequired, aRequired] = [new Set(strings(b['required'])), new Set(strings(a['required']))];
  for (const name of Object.keys(bProps)) {
    if (!(name in aProps)) {
      // A request field that went away is refused only where unknown fields are.
      if (direction === 'response') breaks.push({ at: child(at, name), what: 'removed response field' });
      else if (a['additionalProperties'] === false)
        breaks.push({ at: child(at, name), what: 'request field no longer accepted' });
      continue;
    }
    if (direction === 'response' && bRequired.has(name) && !aRequired.has(name))
      breaks.push({ at: child(at, name), what: 'response field no longer always present' });
    breaks.push(
      ...walk(
        { ...before, schema: bProps[name] },
        { ...after, schema: aProps[name] },
        direction,
        child(at, name),
        seen,
      ),
    );
  }
  if (direction === 'request')
    for (const name of aRequired)
      if (!bRequired.has(name)) breaks.push({ at: child(at, name), what: 'new required request field' });
  return breaks;
}

const describe = (set: Set<string> | undefined) => (set === undefined ? 'any' : [...set].join('|'));
const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
