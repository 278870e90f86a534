/**
 * The W3C Trace Context header rules (gateway/observability/trace-context-header.ts), on the
 * functions alone: which `traceparent` values are read and which are ignored, `tracestate`
 * checks, and the ids the gateway makes. trace-context.test.ts runs them through a gateway.
 */
import { describe, expect, it } from 'vitest';
import {
  isValidTraceState,
  newSpanId,
  newTraceId,
  parseTraceParent,
} from '../../../gateway/observability/trace-context-header.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const VALID = `00-${TRACE}-${PARENT}-01`;

describe('traceparent parsing follows the W3C rules', () => {
  it('reads a version-00 header and its sampled flag', () => {
    expect(parseTraceParent(VALID)).toEqual({ traceId: TRACE, parentId: PARENT, sampled: true });
    expect(parseTraceParent(`00-${TRACE}-${PARENT}-00`)?.sampled).toBe(false);
    expect(parseTraceParent(`00-${TRACE}-${PARENT}-03`)?.sampled).toBe(true);
  });

  it.each([
    ['version ff', `ff-${TRACE}-${PARENT}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${PARENT}-01`],
    ['all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version 00 longer than 55', `${VALID}-extra`],
    ['too short', `00-${TRACE}-${PARENT.slice(1)}-01`],
    ['non-hex flags', `00-${TRACE}-${PARENT}-0g`],
    ['wrong separators', `00_${TRACE}_${PARENT}_01`],
    ['a later version without a dash after the flags', `01-${TRACE}-${PARENT}-01x`],
    ['two fields, as node joins them', `${VALID}, ${VALID}`],
  ])('ignores %s', (_name, value) => {
    expect(parseTraceParent(value)).toBeUndefined();
  });

  it('reads a later version by its first four parts', () => {
    expect(parseTraceParent(`cc-${TRACE}-${PARENT}-01-what-the-future-adds`)).toEqual({
      traceId: TRACE,
      parentId: PARENT,
      sampled: true,
    });
  });

  it('checks tracestate: well-formed members, at most 32, no key twice', () => {
    expect(isValidTraceState('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7')).toBe(true);
    expect(isValidTraceState(['congo=t61rcWkgMzE', 'tenant@vendor=x'])).toBe(true);
    expect(isValidTraceState('Congo=1')).toBe(false);
    expect(isValidTraceState('congo=a=b')).toBe(false);
    expect(isValidTraceState('congo=1,congo=2')).toBe(false);
    const members = Array.from({ length: 33 }, (_, i) => `k${i}=v`);
    expect(isValidTraceState(members.slice(0, 32).join(','))).toBe(true);
    expect(isValidTraceState(members.join(','))).toBe(false);
  });

  it('makes distinct, lower-case, non-zero ids of the right length', () => {
    const traces = new Set(Array.from({ length: 2000 }, newTraceId));
    const spans = new Set(Array.from({ length: 2000 }, newSpanId));
    expect(traces.size).toBe(2000);
    expect(spans.size).toBe(2000);
    for (const id of traces) expect(id).toMatch(/^(?!0+$)[0-9a-f]{32}$/);
    for (const id of spans) expect(id).toMatch(/^(?!0+$)[0-9a-f]{16}$/);
  });
});
