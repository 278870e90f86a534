/**
 * A route's CORS config compiled once into what each request needs: a set lookup for the
 * origin and the field values, joined ahead of time.
 */
import type { CorsDefinition } from '../config/schema/cors.ts';

export interface CorsPolicy {
  allows(origin: string): boolean;
  /** `Access-Control-Allow-Origin: *`: any origin, without credentials. */
  readonly anyOrigin: boolean;
  readonly credentials: boolean;
  readonly allowMethods: string;
  readonly allowHeaders: string;
  /** Undefined when nothing is exposed. */
  readonly exposeHeaders: string | undefined;
  readonly maxAge: string;
}

export function compileCors(cors: CorsDefinition): CorsPolicy {
  const origins = new Set(cors.origins);
  const anyOrigin = origins.has('*');
  return {
    allows: anyOrigin ? () => true : (origin) => origins.has(origin),
    anyOrigin,
    credentials: cors.credentials,
    allowMethods: cors.methods.join(', '),
    allowHeaders: cors.headers.join(', '),
    exposeHeaders: cors.exposeHeaders.length === 0 ? undefined : cors.exposeHeaders.join(', '),
    maxAge: String(cors.maxAgeSeconds),
  };
}
