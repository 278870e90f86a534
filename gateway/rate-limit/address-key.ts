/**
 * The client address as the limits count it. An IPv4 address is one caller; an IPv6 address
 * is grouped by its prefix (`rateLimits.ipv6PrefixLength`, /64 by default): one subscriber,
 * host or container is routinely given a whole /64, so counting per full address would let
 * it take a new counter per request from 2^64 addresses.
 */
import { isIPv6 } from 'node:net';

/** `2001:db8:1:2::/64` for `2001:db8:1:2:aaaa::1` at 64; IPv4 and anything else unchanged. */
export function addressKey(address: string, ipv6PrefixLength: number): string {
  // No colon, no IPv6 (the common IPv4 peer): isIPv6's regex costs ~0.4% of a cache hit's CPU.
  if (ipv6PrefixLength >= 128 || !address.includes(':') || !isIPv6(address)) return address;
  // An IPv4 peer of a dual-stack socket is that IPv4 address, one caller.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1]!;
  const groups = expandIpv6(address);
  if (groups === undefined) return address;
  const kept: number[] = [];
  for (let i = 0; i < 8; i++) {
    const bits = Math.min(16, Math.max(0, ipv6PrefixLength - i * 16));
    kept.push(bits === 0 ? 0 : groups[i]! & (0xffff << (16 - bits)) & 0xffff);
  }
  return `${compress(kept)}/${ipv6PrefixLength}`;
}

/** The eight 16-bit groups of an IPv6 address (`::` and a trailing dotted IPv4 included). */
function expandIpv6(address: string): number[] | undefined {
  let text = address.split('%', 1)[0]!.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - left.length - right.length;
  if (missing < 0 || (tail === undefined && missing !== 0)) return undefined;
  return [...left, ...Array<string>(missing).fill('0'), ...right].map((group) => parseInt(group, 16));
}

/** The groups in the usual short form: hex without leading zeros, the longest zero run as `::`. */
function compress(groups: readonly number[]): string {
  let bestAt = -1;
  let bestLength = 0;
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength && j - i > 1) [bestAt, bestLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestAt === -1) return hex.join(':');
  return `${hex.slice(0, bestAt).join(':')}::${hex.slice(bestAt + bestLength).join(':')}`;
}
