/**
 * Small helpers shared by the identity tests: config filled with the schema's defaults, a
 * logger whose lines the test can read, a clock the test moves, and outcome assertions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { pino, type Logger } from 'pino';
import { afterAll, expect } from 'vitest';
import { AuthConfigSchema, type AuthConfig } from '../../../../gateway/config/schema/identity.ts';
import type { AuthOutcome } from '../../../../gateway/identity/authenticate.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Validates `input` against the auth schema and fills defaults, as the gateway config does. */
export function authConfig(input: unknown = {}): AuthConfig {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
  addFormats(ajv);
  const validate = ajv.compile<AuthConfig>(AuthConfigSchema);
  const data = structuredClone(input);
  if (!validate(data)) throw new Error(JSON.stringify(validate.errors));
  return data;
}

export function memoryLogger(): { logger: Logger; lines: () => string } {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      text += chunk.toString();
      callback();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines: () => text };
}

export function testClock(start = Date.now()): { now: () => number; advance: (ms: number) => void } {
  let current = start;
  return { now: () => current, advance: (ms) => (current += ms) };
}

/** Made by `tempDir` in this test file, removed after it. */
const tempDirs: string[] = [];
// Registered on the root suite of each test file that imports this one. The integration tier's
// global setup removes its whole TMPDIR anyway; the unit tier runs without one, so without this
// every directory made here stayed in /tmp.
afterAll(() => {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A directory of its own under the temporary directory, removed after the test file. */
export function tempDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `portico-${name}-`));
  tempDirs.push(dir);
  return dir;
}

/** Asserts a 401 invalid_token with an RFC 6750 challenge; returns the description. */
export function expectInvalidToken(outcome: AuthOutcome, description?: string | RegExp): string {
  expect(outcome.ok).toBe(false);
  if (outcome.ok) throw new Error('unreachable');
  expect(outcome.problem.code).toBe('ERR_INVALID_TOKEN');
  expect(outcome.problem.status).toBe(401);
  const challenge = outcome.problem.headers['www-authenticate'] ?? '';
  expect(challenge).toMatch(/^Bearer realm="portico", error="invalid_token", error_description="[^"\\]*"$/);
  if (description !== undefined) expect(outcome.reason).toMatch(description);
  return outcome.reason;
}

export function expectPrincipal(outcome: AuthOutcome) {
  if (!outcome.ok) throw new Error(`expected success, got ${outcome.problem.code}: ${outcome.reason}`);
  return outcome;
}
