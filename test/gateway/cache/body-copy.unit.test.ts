/**
 * A stored body holds only its own bytes: a small body copied out of a shared allocation
 * would keep that whole allocation (a slab of Node's buffer pool) alive for as long as it is
 * stored, so the cache would hold far more memory than it is charged for.
 */
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { readBody, teeBody } from '../../../gateway/cache/flight/body-tee.ts';

const chunks = () => [Buffer.from('{"id":"o1",'), Buffer.from('"status":"pending"}')];

describe('the copy of a body the cache stores', () => {
  it('from teeBody is the body alone, in an allocation of exactly its size', async () => {
    let stored: Buffer | undefined;
    const relayed = await text(
      teeBody(
        Readable.from(chunks()),
        1024,
        (copy) => (stored = copy),
        () => {},
      ),
    );
    expect(relayed).toBe('{"id":"o1","status":"pending"}');
    expect(stored?.toString()).toBe(relayed);
    expect(stored?.buffer.byteLength).toBe(stored?.length);
  });

  it('from readBody (background revalidation) as well', async () => {
    const body = await readBody(Readable.from(chunks()), 1024);
    expect(body?.toString()).toBe('{"id":"o1","status":"pending"}');
    expect(body?.buffer.byteLength).toBe(body?.length);
  });
});
