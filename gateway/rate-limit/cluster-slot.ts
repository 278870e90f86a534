/**
 * The Redis Cluster slot of a key (CRC16/XMODEM of its hashed part, modulo 16384), so that
 * the counter can put every count of one turn that falls in one slot into one script call:
 * a script may touch the keys of one slot only, and a call per slot rather than per key is
 * what keeps a batch a batch once counters are spread over the slots by the counted key.
 */

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[byte] = crc & 0xffff;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!) & 0xffff;
  return crc;
}

/**
 * What Redis Cluster hashes to pick a key's slot: the text inside the first `{...}` when it
 * is not empty, else the whole key. Keys with the same hashed text share a slot.
 */
export function hashedPart(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  return close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

/** The slot Redis Cluster keeps `key` in (the key as sent: with any client prefix). */
export function clusterSlot(key: string): number {
  return crc16(Buffer.from(hashedPart(key))) % 16384;
}
