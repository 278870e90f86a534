/**
 * Request body validation with Ajv, compiled once per schema at start-up (or loaded from the
 * validator cache, shared/validator-cache.ts). Every violation is reported, each naming its
 * field by JSON Pointer, in one 422.
 */
import type { ErrorObject } from 'ajv';
import type { Static, TSchema } from '@sinclair/typebox';
import { validationProblem } from '../../shared/errors.ts';
import type { ProblemFieldError } from '../../shared/errors.ts';
import { compileValidator, type AjvRecipe } from '../../shared/validator-cache.ts';

const BODY_AJV: AjvRecipe = {
  options: { allErrors: true, strict: true, strictTypes: false },
  formats: ['uuid', 'date-time', 'uri'],
  keywords: ['example'],
};

/** Enough to fix a body; a 64 KiB body of junk fields must not produce a megabyte answer. */
const MAX_REPORTED_ERRORS = 50;

export type Validator<T extends TSchema> = (value: unknown) => Static<T>;

/**
 * @param readOnlyFields fields that exist on the resource but may not be written: reported as
 * read-only rather than unknown, so the client learns why.
 */
export function createValidator<T extends TSchema>(
  schema: T,
  readOnlyFields: readonly string[] = [],
): Validator<T> {
  const check = compileValidator<Static<T>>(schema, BODY_AJV);
  return (value) => {
    if (check(value)) return value;
    throw validationProblem(describe(check.errors ?? [], readOnlyFields).slice(0, MAX_REPORTED_ERRORS));
  };
}

function describe(errors: ErrorObject[], readOnlyFields: readonly string[]): ProblemFieldError[] {
  const seen = new Set<string>();
  const out: ProblemFieldError[] = [];
  for (const error of errors) {
    let pointer = error.instancePath;
    let detail = error.message ?? 'is invalid';
    if (error.keyword === 'additionalProperties') {
      const field = String((error.params as { additionalProperty: string }).additionalProperty);
      pointer = `${pointer}/${field.replaceAll('~', '~0').replaceAll('/', '~1')}`;
      detail =
        pointer.split('/').length === 2 && readOnlyFields.includes(field)
          ? `${field} is read-only`
          : `${field} is not a field of this resource`;
    } else if (error.keyword === 'required') {
      const field = String((error.params as { missingProperty: string }).missingProperty);
      pointer = `${pointer}/${field}`;
      detail = `${field} is required`;
    } else if (error.keyword === 'enum') {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues;
      // The currency list is long: name it rather than print it.
      detail = allowed.length > 10 ? 'is not an allowed value' : `must be one of ${allowed.join(', ')}`;
    }
    const key = `${pointer}|${detail}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ pointer: `#${pointer}`, detail });
  }
  return out;
}
