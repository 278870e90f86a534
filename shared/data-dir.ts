/**
 * Where a process keeps its development keys, certificates, embedded database and tokens:
 * PORTICO_DATA_DIR, `.portico` when unset or empty. One reading for every process and script,
 * so that `npm start`, the built gateway and service, and the CLIs agree on the directory.
 */
export const DEFAULT_DATA_DIR = '.portico';

export function dataDirOf(env: NodeJS.ProcessEnv): string {
  return env['PORTICO_DATA_DIR'] || DEFAULT_DATA_DIR;
}
