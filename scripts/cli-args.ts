/**
 * What every command-line script of Portico does alike: `--help` (or `-h`) prints the usage
 * to stdout and exits 0, a usage error prints it to stderr and exits 2, and scopes are checked
 * against the ones Portico knows, so that a typo is refused instead of minting a credential
 * that silently grants nothing.
 */
import { SCOPES } from '../shared/principal.ts';

/** Prints `help` and exits 0 when the arguments ask for it, whatever else they hold. */
export function answerHelp(help: string, argv: readonly string[] = process.argv.slice(2)): void {
  // Only before a `--` that ends the options: after it, `--help` is an argument.
  const options = argv.includes('--') ? argv.slice(0, argv.indexOf('--')) : argv;
  if (!options.includes('--help') && !options.includes('-h')) return;
  process.stdout.write(`${help.trimEnd()}\n`);
  process.exit(0);
}

/** Prints `name: message` and the usage to stderr, and exits 2. */
export function usageError(name: string, usage: string, message: string): never {
  process.stderr.write(`${name}: ${message}\n${usage.trimEnd()}\n(--help for more)\n`);
  process.exit(2);
}

/** Takes `name VALUE` out of `argv` and returns VALUE; undefined when `name` is not there. */
export function takeOption(argv: string[], name: string): string | undefined {
  const at = argv.indexOf(name);
  if (at === -1) return undefined;
  const [, value] = argv.splice(at, 2);
  return value;
}

/** The scopes of a `--scope "a b"` argument, or a message naming the unknown ones. */
export function parseScopes(text: string): { scopes: string[] } | { error: string } {
  const scopes = text.split(' ').filter((scope) => scope !== '');
  const known = new Set<string>(SCOPES);
  const unknown = scopes.filter((scope) => !known.has(scope));
  if (unknown.length > 0)
    return {
      error: `--scope: unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.map((s) => JSON.stringify(s)).join(', ')}; known: ${SCOPES.join(' ')}`,
    };
  if (scopes.length === 0) return { error: '--scope: at least one scope' };
  return { scopes };
}
