/**
 * The gateway's configuration: the schema assembled in schema/gateway.ts from one schema file
 * per subsystem, validated once at start-up. Every bad key is reported with its path; what the file
 * does not name comes from the defaults in those schemas.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { ErrorObject } from 'ajv';
import { createGatewayConfigSchema, type GatewayConfig } from './schema/gateway.ts';
import { checkAuthConfig } from './schema/identity.ts';
import { checkListenerConfig } from './schema/listener.ts';
import { checkRateLimitsConfig } from './schema/rate-limit.ts';
import { resolveRouteInheritance } from './schema/route-inheritance.ts';
import { sharedLabelWarnings } from './schema/route-name.ts';
import { corsDpopWarnings } from './schema/cors.ts';
import { checkRouteRateLimits } from './schema/route-rate-limits.ts';
import { checkRouteDefinitions, type RouteDefinitionInput } from './schema/routes.ts';
import { checkTracingConfig } from './schema/tracing.ts';
import { checkProxyConfig } from './schema/upstream.ts';
import { problemLines } from './locate.ts';
import { yaml } from './yaml-module.ts';
import { compileValidator, type AjvRecipe } from '../../shared/validator-cache.ts';

/** Where in the file a problem sits, when the file says: its line, and a YAML error's excerpt. */
export interface ProblemPlace {
  line?: number;
  /** The lines around a syntax error, with a caret under it. */
  excerpt?: string;
}

/**
 * A config that failed validation: `problems` lists every bad key as `path: reason`, schema
 * and cross-field problems together; `source` is the file (or `config` for an object), and
 * `places` the file's line of each problem where it has one.
 */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  readonly source: string;
  readonly places: readonly ProblemPlace[];
  constructor(source: string, problems: readonly string[], places: readonly ProblemPlace[] = []) {
    const described = problems.map((problem, index) => {
      const { line, excerpt } = places[index] ?? {};
      // A syntax error names its line and column already.
      const place = line === undefined || problem.startsWith('(file)') ? '' : ` (line ${line})`;
      return `${problem}${place}${excerpt === undefined ? '' : `\n${indent(excerpt, '    ')}`}`;
    });
    super(`invalid gateway config ${source}:\n  ${described.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
    this.source = source;
    this.places = places;
  }

  /** One line per problem as compilers print them (`file:line: path: reason`), excerpts below. */
  located(): string[] {
    return this.problems.map((problem, index) => {
      const { line, excerpt } = this.places[index] ?? {};
      const where = line === undefined ? this.source : `${this.source}:${line}`;
      const text = `${where}: ${problem.replace(/^\(file\): /, '')}`;
      return excerpt === undefined ? text : `${text}\n${indent(excerpt, '    ')}`;
    });
  }
}

function indent(text: string, prefix: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? '' : `${prefix}${line}`))
    .join('\n');
}

export interface LoadedConfig {
  config: GatewayConfig;
  /** Legal but worth an operator's attention (for example a route without authentication). */
  warnings: string[];
}

/**
 * verbose: an `anyOf` error carries its schema and the value, for one readable line.
 * optimize off: the schema is compiled at every reload (and at a start whose cache misses),
 * validates once, and Ajv's pass that tidies the ~400 KB of code it generates costs more than it
 * would ever save.
 */
const CONFIG_AJV: AjvRecipe = {
  options: { allErrors: true, useDefaults: true, strict: false, verbose: true, code: { optimize: false } },
  formats: 'all',
};

/**
 * Validates a parsed config object and fills defaults. `baseDir` anchors relative file
 * paths (the config file's directory).
 */
export function parseConfig(
  input: unknown,
  options: { env?: NodeJS.ProcessEnv; baseDir?: string; source?: string } = {},
): LoadedConfig {
  const source = options.source ?? 'config';
  const data = structuredClone(input ?? {});
  if (typeof data !== 'object' || Array.isArray(data))
    throw new ConfigError(source, ['(root): must be an object']);
  const validate = compileValidator<GatewayConfig>(
    createGatewayConfigSchema(options.env ?? process.env),
    CONFIG_AJV,
  );
  const valid = validate(data);
  const schemaErrors = validate.errors ?? [];
  const problems = [
    ...new Set(withoutAlternatives(schemaErrors).map(formatError)),
    ...crossFieldProblems(data as GatewayConfig, schemaErrors),
    ...(valid ? productionProblems(data, options.env ?? process.env) : []),
  ];
  if (!valid || problems.length > 0) throw new ConfigError(source, problems);
  const config = data;
  // What a route does not set, from its parent (schema/route-inheritance.ts).
  config.routes = resolveRouteInheritance(config.routes);

  const baseDir = options.baseDir ?? process.cwd();
  const { tls } = config.listener;
  if (tls.certFile !== undefined) tls.certFile = resolvePath(baseDir, tls.certFile);
  if (tls.keyFile !== undefined) tls.keyFile = resolvePath(baseDir, tls.keyFile);
  const { jwt } = config.auth;
  if (jwt.jwksFile !== undefined) jwt.jwksFile = resolvePath(baseDir, jwt.jwksFile);
  // Paths the file wrote are relative to it; the defaults' (variables, data dir) to the process.
  if ((input as { proxy?: { upstreamTls?: unknown } } | null)?.proxy?.upstreamTls !== undefined) {
    for (const entry of config.proxy.upstreamTls) {
      for (const key of ['caFile', 'certFile', 'keyFile'] as const) {
        const path = entry[key];
        if (path !== undefined) entry[key] = resolvePath(baseDir, path);
      }
    }
  }

  const warnings = [
    ...config.routes
      .filter((route) => route.auth === 'none')
      .map(
        (route) =>
          `route ${route.prefix} has auth: none; requests to it are forwarded without authentication`,
      ),
    ...sharedLabelWarnings(config.routes),
    ...corsDpopWarnings(config.routes),
  ];
  return { config: deepFreeze(config), warnings };
}

/**
 * The checks the schema cannot express, for every section that passed the schema, so that
 * one run reports schema and cross-field problems together. A section with schema errors is
 * skipped: its checks could not make sense of it.
 */
function crossFieldProblems(config: GatewayConfig, schemaErrors: readonly ErrorObject[]): string[] {
  // An unknown top-level key (instance path '') breaks no section.
  const broken = new Set(
    schemaErrors
      .filter((error) => error.instancePath !== '')
      .map((error) => error.instancePath.split('/')[1]),
  );
  const checks: [keyof GatewayConfig, () => string[]][] = [
    ['listener', () => checkListenerConfig(config.listener)],
    [
      'routes',
      () => {
        const routes = config.routes as readonly RouteDefinitionInput[];
        const problems = checkRouteDefinitions(routes, resolveRouteInheritance(routes));
        if (broken.has('rateLimits')) return problems;
        return [...problems, ...checkRouteRateLimits(routes, config.rateLimits.policies)];
      },
    ],
    // The identity checks speak JSON pointers; operators read `auth.jwt.issuer`.
    [
      'auth',
      () =>
        checkAuthConfig(config.auth).map((problem) => {
          const [pointer = '', ...reason] = problem.split(': ');
          return `${readablePath(pointer)}: ${reason.join(': ')}`;
        }),
    ],
    ['rateLimits', () => checkRateLimitsConfig(config.rateLimits)],
    ['proxy', () => checkProxyConfig(config.proxy)],
    ['tracing', () => checkTracingConfig(config.tracing)],
  ];
  return checks.flatMap(([section, check]) => (broken.has(section) ? [] : check()));
}

/**
 * Outside development (NODE_ENV=production, as the image sets it) the gateway trusts only a
 * configured issuer: the development issuer's keys live in each process's data dir, so every
 * replica would be an issuer of its own and a token would work on one of N.
 */
function productionProblems(config: GatewayConfig, env: NodeJS.ProcessEnv): string[] {
  const { jwt } = config.auth;
  const routes = resolveRouteInheritance(config.routes);
  const takesTokens = routes.some((route) => route.auth !== 'none');
  if (env['NODE_ENV'] !== 'production' || !takesTokens) return [];
  if (jwt.jwksUrl !== undefined || jwt.jwksFile !== undefined) return [];
  // Opaque tokens alone: the development issuer is not trusted at all (acceptJwt needs keys).
  if (config.auth.introspection !== undefined) return [];
  return [
    'auth.jwt: NODE_ENV=production needs the identity provider: set jwksUrl (or jwksFile), issuer and audience; ' +
      "the development issuer is per data dir, each replica's own",
  ];
}

/** Frozen once loaded: nothing may change the running config behind the operator's back. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Reads a YAML or JSON file (YAML is a superset of JSON) and validates it. */
export function loadConfigFile(path: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(path, [`(file): ${(error as Error).message}`]);
  }
  let parsed: unknown;
  try {
    parsed = yaml().parse(text);
  } catch (error) {
    throw yamlError(path, error as Error);
  }
  try {
    return parseConfig(parsed, { env, baseDir: dirname(resolve(path)), source: path });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const lines = problemLines(text, error.problems);
    throw new ConfigError(
      path,
      error.problems,
      lines.map((line) => (line === undefined ? {} : { line })),
    );
  }
}

/**
 * A syntax error: its reason and place on one line, the excerpt the YAML parser drew (the
 * line, a caret under the spot) kept beside it.
 */
function yamlError(path: string, error: Error): ConfigError {
  const [first = '', ...rest] = error.message.split('\n');
  const line = error instanceof yaml().YAMLParseError ? error.linePos?.[0].line : undefined;
  const excerpt = rest.join('\n').replace(/^\n+|\n+$/g, '');
  return new ConfigError(
    path,
    [`(file): ${first.replace(/:$/, '')}`],
    [{ ...(line === undefined ? {} : { line }), ...(excerpt === '' ? {} : { excerpt }) }],
  );
}

/** The config from `PORTICO_CONFIG`, or the built-in defaults when it is unset. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const path = env['PORTICO_CONFIG'];
  return path === undefined || path === '' ? parseConfig({}, { env }) : loadConfigFile(path, env);
}

function resolvePath(baseDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(baseDir, path);
}

/** `/routes/0/upstream` → `routes[0].upstream`, the way people read config files. */
function readablePath(pointer: string): string {
  let path = '';
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    path += /^\d+$/.test(segment) ? `[${segment}]` : path === '' ? segment : `.${segment}`;
  }
  return path;
}

function formatError(error: ErrorObject): string {
  const at = readablePath(error.instancePath);
  const join = (key: string) => (at === '' ? key : `${at}.${key}`);
  switch (error.keyword) {
    case 'additionalProperties':
      return `${join(String(error.params['additionalProperty']))}: unknown key`;
    case 'required':
      return `${join(String(error.params['missingProperty']))}: is required`;
    case 'format':
      return `${at}: must be a ${error.params['format'] === 'uri' ? 'URL' : String(error.params['format'])}`;
    case 'enum':
      return `${at}: must be one of ${(error.params['allowedValues'] as unknown[]).join(', ')}`;
    case 'anyOf':
      return `${at}: must be ${expectedOf(error.parentSchema)}, got ${JSON.stringify(error.data)}`;
    default:
      return `${at || '(root)'}: ${error.message ?? 'is invalid'}`;
  }
}

/**
 * An `anyOf` reports one error per alternative and then its own: an operator needs only the
 * last, which says what the key takes (formatError), not why each alternative missed.
 */
function withoutAlternatives(errors: readonly ErrorObject[]): ErrorObject[] {
  const unions = errors.filter((error) => error.keyword === 'anyOf');
  return errors.filter(
    (error) =>
      error.keyword === 'anyOf' ||
      !unions.some(
        (union) =>
          error.schemaPath.startsWith(`${union.schemaPath}/`) &&
          error.instancePath.startsWith(union.instancePath),
      ),
  );
}

/** What an alternative takes: the schema's own `expected` words, else its alternatives' types. */
function expectedOf(schema: unknown): string {
  const node = schema as { expected?: string; anyOf?: { type?: string }[] } | undefined;
  if (node?.expected !== undefined) return node.expected;
  const types = (node?.anyOf ?? []).map((option) =>
    option.type === undefined
      ? 'another form'
      : `${/^[aeiou]/.test(option.type) ? 'an' : 'a'} ${option.type}`,
  );
  return types.join(' or ');
}

/**
 * The config reference as a Markdown table (key, type, default, description), generated
 * from the schemas so that docs/gateway-config.md cannot drift from them (a test compares).
 */
export function configReference(env: NodeJS.ProcessEnv = {}): string {
  const rows: string[] = ['| key | type | default | description |', '|---|---|---|---|'];
  const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
  const walk = (schema: SchemaNode, path: string) => {
    const type = schema.enum
      ? schema.enum.map((v) => `\`${String(v)}\``).join(' \\| ')
      : (schema.type ?? schema.anyOf?.map((option) => option.type ?? 'any').join(' \\| ') ?? 'any');
    const isObject = schema.type === 'object' && schema.properties !== undefined;
    const shownDefault =
      schema.default === undefined || (isObject && JSON.stringify(schema.default) === '{}')
        ? ''
        : `\`${JSON.stringify(schema.default)}\``;
    if (path !== '')
      rows.push(`| \`${path}\` | ${type} | ${cell(shownDefault)} | ${cell(schema.description ?? '')} |`);
    for (const [key, child] of Object.entries(schema.properties ?? {}))
      walk(child, path === '' ? key : `${path}.${key}`);
    if (schema.type === 'array' && schema.items?.properties !== undefined) {
      for (const [key, child] of Object.entries(schema.items.properties)) walk(child, `${path}[].${key}`);
    }
  };
  walk(createGatewayConfigSchema(env), '');
  return rows.join('\n');
}

interface SchemaNode {
  type?: string;
  enum?: unknown[];
  default?: unknown;
  description?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
}
