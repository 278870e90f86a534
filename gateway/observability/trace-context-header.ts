/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): reading a client's `traceparent`
 * and `tracestate` exactly as the spec says, and making ids. A header that fails any rule is
 * not an error to answer: the spec asks the receiver to ignore it and start a new trace.
 */
import { randomFillSync } from 'node:crypto';

/** What a valid `traceparent` carries, lower-case hex. */
export interface TraceParent {
  traceId: string;
  parentId: string;
  /** Only the `sampled` bit: the one flag version 00 defines. */
  sampled: boolean;
}

const HEX_LOWER = /^[0-9a-f]+$/;
const ALL_ZERO = /^0+$/;
/** Version 00 is exactly this long; a later version at least this long. */
const VERSION_00_LENGTH = 55;

/**
 * The parent a `traceparent` field names, or undefined when it must be ignored: wrong length
 * or shape, upper-case or non-hex digits, version `ff`, an all-zero trace or parent id. A later
 * version than 00 is read as the spec says (its first four parts, followed by `-` or nothing).
 */
export function parseTraceParent(value: string | string[] | undefined): TraceParent | undefined {
  // Two traceparent fields cannot be told apart: neither is trusted.
  if (typeof value !== 'string' || value.length < VERSION_00_LENGTH) return undefined;
  const version = value.slice(0, 2);
  if (!HEX_LOWER.test(version) || version === 'ff') return undefined;
  if (version === '00' && value.length !== VERSION_00_LENGTH) return undefined;
  if (value.length > VERSION_00_LENGTH && value[VERSION_00_LENGTH] !== '-') return undefined;
  if (value[2] !== '-' || value[35] !== '-' || value[52] !== '-') return undefined;
  const traceId = value.slice(3, 35);
  const parentId = value.slice(36, 52);
  const flags = value.slice(53, 55);
  if (!HEX_LOWER.test(traceId) || ALL_ZERO.test(traceId)) return undefined;
  if (!HEX_LOWER.test(parentId) || ALL_ZERO.test(parentId)) return undefined;
  if (!HEX_LOWER.test(flags)) return undefined;
  return { traceId, parentId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** The `traceparent` this gateway sends: always version 00, whatever version it received. */
export function formatTraceParent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

const MAX_TRACESTATE_MEMBERS = 32;
/** `key=value`: a simple or a multi-tenant (`tenant@system`) key, a printable value. */
const TRACESTATE_MEMBER =
  /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * Whether `tracestate` (its fields joined with commas, as RFC 9110 combines them) may travel
 * on: at most 32 members, each well formed, no key twice. Empty members (`a=1,,b=2`) are
 * allowed by the spec; a malformed one makes the whole header go, which the spec permits.
 */
export function isValidTraceState(value: string | string[] | undefined): boolean {
  if (value === undefined) return true;
  const joined = typeof value === 'string' ? value : value.join(',');
  const keys = new Set<string>();
  for (const raw of joined.split(',')) {
    const member = raw.trim();
    if (member === '') continue;
    if (!TRACESTATE_MEMBER.test(member)) return false;
    const key = member.slice(0, member.indexOf('='));
    if (keys.has(key)) return false;
    keys.add(key);
  }
  return keys.size <= MAX_TRACESTATE_MEMBERS;
}

/**
 * Random ids from one pool of random bytes refilled in one call when used up: a
 * randomBytes() call per id costs a buffer and a syscall path each, on every request.
 */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

function randomHex(bytes: number): string {
  if (offset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const start = offset;
  offset += bytes;
  const hex = pool.toString('hex', start, offset);
  // All-zero ids are invalid; at 2^-64 odds one draw more is cheaper than a branch elsewhere.
  return ALL_ZERO.test(hex) ? randomHex(bytes) : hex;
}

/** A new 16-byte trace id, 32 lower-case hex digits. */
export const newTraceId = (): string => randomHex(16);
/** A new 8-byte span id, 16 lower-case hex digits. */
export const newSpanId = (): string => randomHex(8);
