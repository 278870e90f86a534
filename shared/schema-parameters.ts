/**
 * A JSON schema with its `default` values taken out as parameters, so that one validator's code
 * serves every start: the gateway's defaults follow the environment (the service's port, the
 * data dir's certificate files), and a schema keyed with them would change at every start on
 * port 0. Ajv writes a default into its code only as the JSON of the value (the assignment of
 * `useDefaults`, the schema literal of `verbose` errors), so the code of the schema with a
 * placeholder string in each default's place, with each placeholder's JSON replaced by the
 * value's, is the code Ajv generates for the schema itself (a test compares the two).
 */

/** The schema with placeholders, and the defaults they stand for, in placeholder order. */
export interface ParameterizedSchema {
  template: object;
  values: unknown[];
}

/** NUL characters: no schema of ours writes them, so a placeholder cannot be taken for text. */
const placeholder = (index: number) => `\u0000portico-default-${index}\u0000`;
const PLACEHOLDER_JSON = /"\\u0000portico-default-(\d+)\\u0000"/g;

/** Where a schema holds further schemas: the only places a `default` is a default. */
const SCHEMA_MAPS = ['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas'];
const SCHEMA_LISTS = ['anyOf', 'allOf', 'oneOf', 'prefixItems'];
const SCHEMA_SLOTS = [
  'items',
  'additionalItems',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
];

/** JSON as Ajv writes it into code (its `safeStringify`). */
export function codeJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/**
 * The schema's defaults as parameters; undefined when the schema cannot be written as JSON
 * faithfully with them (the template filled again must give the schema's own JSON).
 */
export function parameterize(schema: object): ParameterizedSchema | undefined {
  const values: unknown[] = [];
  const template = withPlaceholders(schema, values) as object;
  if (fillParameters(codeJson(template), values) !== codeJson(schema)) return undefined;
  return { template, values };
}

/** `code` (or JSON) written for the template, with each placeholder's JSON replaced by its value's. */
export function fillParameters(code: string, values: readonly unknown[]): string {
  return code.replace(PLACEHOLDER_JSON, (_, index: string) => {
    const position = Number(index);
    if (position >= values.length) throw new Error(`no value for default ${position}`);
    return codeJson(values[position]);
  });
}

/**
 * `code` written for the template, each placeholder's JSON replaced by a call `name(index)`
 * that must return what Ajv's literal would: a fresh copy of the value's JSON. The code stays
 * the same from start to start, whatever the defaults, so V8 may cache its compiled form.
 */
export function callsForParameters(code: string, name: string): string {
  return code.replace(PLACEHOLDER_JSON, (_, index: string) => `${name}(${index})`);
}

function withPlaceholders(schema: unknown, values: unknown[]): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const copy: Record<string, unknown> = { ...(schema as Record<string, unknown>) };
  // Ajv writes no code for an undefined default; JSON drops it.
  if (copy['default'] !== undefined) {
    copy['default'] = placeholder(values.length);
    values.push((schema as Record<string, unknown>)['default']);
  }
  for (const key of SCHEMA_MAPS) {
    const map = copy[key];
    if (typeof map !== 'object' || map === null) continue;
    copy[key] = Object.fromEntries(
      Object.entries(map).map(([name, child]) => [name, withPlaceholders(child, values)]),
    );
  }
  for (const key of SCHEMA_LISTS) {
    const list = copy[key];
    if (Array.isArray(list)) copy[key] = list.map((child) => withPlaceholders(child, values));
  }
  for (const key of SCHEMA_SLOTS) {
    const slot = copy[key];
    if (slot === undefined) continue;
    copy[key] = Array.isArray(slot)
      ? slot.map((child) => withPlaceholders(child, values))
      : withPlaceholders(slot, values);
  }
  return copy;
}
