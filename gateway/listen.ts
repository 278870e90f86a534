/**
 * Opening and closing the gateway's listeners, as promises: shared by the HTTPS, redirect and
 * admin listeners (start.ts, start-admin.ts).
 */
import type { Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { portUnavailable } from '../shared/port-unavailable.ts';

/**
 * One `listen`, as a promise: resolves with the address, rejects with a port that cannot be
 * taken, naming the `setting` that chose it.
 */
export function listen(
  server: NetServer,
  port: number,
  host: string | undefined,
  setting: string,
): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const refuse = (error: Error) => reject(portUnavailable(error, setting, port, host));
    server.once('error', refuse);
    server.listen(port, host, () => {
      server.off('error', refuse);
      resolve(server.address() as AddressInfo);
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
