/**
 * Setup file of the unit tier: a `*.unit.test.ts` that opens a socket, listens or starts a
 * process fails at once, naming what it did, instead of passing here by luck (a server left
 * running on the machine) and making the tier slow. Such a test belongs in the integration
 * tier: rename it to `*.test.ts`.
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

function refuse(what: string): never {
  throw new Error(`a unit test must not ${what}: name the file *.test.ts (integration tier)`);
}

net.Server.prototype.listen = function listen(): never {
  return refuse('listen on a socket');
};
net.Socket.prototype.connect = function connect(): never {
  return refuse('open a socket');
};
for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const)
  Object.assign(childProcess, { [name]: () => refuse(`start a process (child_process.${name})`) });
// The named imports of node:child_process (import { spawn } from ...) see the replacements too.
syncBuiltinESMExports();
