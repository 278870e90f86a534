/**
 * The store of 206 pieces (RFC 9111 section 3.4) on its own: combining, starting over on
 * another validator, and its bounds against many tiny pieces.
 */
import { describe, expect, it } from 'vitest';
import { createPartialStore } from '../../../gateway/cache/store/partial-store.ts';

const piece = (first: number, text: string, validator = '"a"', total = 10) => ({
  validator,
  total,
  first,
  bytes: Buffer.from(text),
});

const owner = { path: '/p', primary: 'P', varyValues: new Map<string, string | undefined>() };

describe('RFC 9111 section 3.4: the pieces kept until they cover a representation', () => {
  it('returns the whole body once the pieces cover it, in any order and overlapping', () => {
    const store = createPartialStore(1 << 20);
    expect(store.add('k', owner, piece(6, 'ghij'))).toBeUndefined();
    expect(store.add('k', owner, piece(0, 'abcd'))).toBeUndefined();
    expect(store.add('k', owner, piece(3, 'defg'))?.toString()).toBe('abcdefghij');
    // Combined pieces are gone: the next piece starts over.
    expect(store.add('k', owner, piece(0, 'abcde'))).toBeUndefined();
  });

  it('starts over on another validator or length, and forgets a path on invalidation', () => {
    const store = createPartialStore(1 << 20);
    store.add('k', owner, piece(0, 'abcde'));
    expect(store.add('k', owner, piece(5, 'fghij', '"b"'))).toBeUndefined();
    expect(store.add('k', owner, piece(0, 'abcde', '"b"'))?.toString()).toBe('abcdefghij');
    store.add('k', owner, piece(0, 'abcde'));
    store.deletePath('/p');
    expect(store.add('k', owner, piece(5, 'fghij'))).toBeUndefined();
  });

  it('keeps at most 64 pieces of one representation and stays within its byte bound', () => {
    const store = createPartialStore(1 << 20);
    for (let i = 0; i < 64; i++) store.add('k', owner, piece(1, 'b', '"a"', 2));
    // The 65th piece starts over, so it does not complete 0..1 with the 64 before it.
    expect(store.add('k', owner, piece(0, 'a', '"a"', 2))).toBeUndefined();
    expect(store.add('k', owner, piece(1, 'b', '"a"', 2))?.toString()).toBe('ab');
    const small = createPartialStore(2048);
    for (let i = 0; i < 40; i++) small.add('k', owner, piece(i, 'x', '"a"', 1000));
    // Over the bound (each piece costs its bytes and a record), the early pieces are gone.
    for (let i = 40; i < 1000; i++) expect(small.add('k', owner, piece(i, 'x', '"a"', 1000))).toBeUndefined();
  });

  it('finds the first bytes held for a URI and a matching variant, and nothing without byte 0', () => {
    const store = createPartialStore(1 << 20);
    const fr = { ...owner, varyValues: new Map([['accept-language', 'fr']]) };
    store.add('k-fr', fr, piece(3, 'defg'));
    expect(store.prefix('P', () => true)).toBeUndefined();
    store.add('k-fr', fr, piece(0, 'abcd'));
    expect(store.prefix('P', (values) => values.get('accept-language') === 'fr')).toMatchObject({
      validator: '"a"',
      total: 10,
      bytes: Buffer.from('abcdefg'),
    });
    expect(store.prefix('P', (values) => values.get('accept-language') === 'de')).toBeUndefined();
    expect(store.prefix('other', () => true)).toBeUndefined();
    store.deletePath('/p');
    expect(store.prefix('P', () => true)).toBeUndefined();
  });
});
