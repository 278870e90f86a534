/**
 * A listener that could not take its port: the setting that chose the port is named, so the
 * operator knows what to change. The kernel's own words (`EADDRINUSE`) say nothing of that.
 */
export class PortUnavailableError extends Error {
  readonly code: string;
  readonly port: number;
  readonly host: string | undefined;
  readonly setting: string;

  constructor(setting: string, port: number, host: string | undefined, cause: NodeJS.ErrnoException) {
    const where = `${setting} ${port}${host === undefined ? '' : ` on ${host}`}`;
    const code = cause.code ?? 'ERR_LISTEN';
    super(`${where}: ${explain(code, setting)}`, { cause });
    this.name = 'PortUnavailableError';
    this.code = code;
    this.port = port;
    this.host = host;
    this.setting = setting;
  }
}

function explain(code: string, setting: string): string {
  switch (code) {
    case 'EADDRINUSE':
      return `already in use by another process (EADDRINUSE): stop it, or set ${setting} to a free port`;
    case 'EACCES':
      return `not allowed (EACCES; ports below 1024 need privileges): set ${setting} above 1023, or grant CAP_NET_BIND_SERVICE`;
    case 'EADDRNOTAVAIL':
      return 'no such address on this machine (EADDRNOTAVAIL): listen on one of its addresses';
    default:
      return `cannot listen (${code})`;
  }
}

/** Wraps a `listen` error; anything that is no system error passes unchanged. */
export function portUnavailable(
  error: Error,
  setting: string,
  port: number,
  host: string | undefined,
): Error {
  const { code } = error as NodeJS.ErrnoException;
  return typeof code === 'string' && code.startsWith('E')
    ? new PortUnavailableError(setting, port, host, error)
    : error;
}
