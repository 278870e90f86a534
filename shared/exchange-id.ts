/**
 * The exchange id binds an answer to the request it answers on the gateway's upstream hop.
 * The gateway sends a fresh one with every attempt it makes (`Portico-Exchange-Id`), and an
 * upstream that echoes it in its answer (the resource service does) lets the gateway tell its
 * answer from a stray one left on a keep-alive connection: without it, an upstream that
 * answers twice hands the second answer to whichever request that connection carries next.
 */
export const EXCHANGE_ID_HEADER = 'portico-exchange-id';

const EXCHANGE_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** True when `value` may be echoed back as an exchange id. */
export function isWellFormedExchangeId(value: unknown): value is string {
  return typeof value === 'string' && EXCHANGE_ID_PATTERN.test(value);
}
