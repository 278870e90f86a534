/**
 * The deployment files as the tests read them: the Kubernetes objects `kubectl apply -k
 * deploy/kubernetes` would create, the Secrets the example generator writes for them, the
 * compose file, and the variables each process's code reads.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { renderKustomization, type Doc } from './kustomize.ts';

export const ROOT = new URL('../../../', import.meta.url).pathname;
export const KUSTOMIZE_DIR = join(ROOT, 'deploy/kubernetes');
export const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

export function kubernetesObjects(): Doc[] {
  return renderKustomization(KUSTOMIZE_DIR);
}

export function composeFile(): Doc {
  // merge: the file shares its gateway settings with YAML merge keys (<<).
  return parse(read('deploy/compose.yaml'), { merge: true }) as Doc;
}

export const find = (docs: Doc[], kind: string, name: string): Doc => {
  const doc = docs.find((d) => d['kind'] === kind && d['metadata']?.name === name);
  if (doc === undefined) throw new Error(`no ${kind} ${name} in the manifests`);
  return doc;
};

/**
 * Runs the example generator (scripts/kubernetes-secrets.ts) into a temporary
 * directory and returns the Secrets it wrote, and that directory (removed by `cleanup`).
 */
export function generatedSecrets(): { secrets: Doc[]; dir: string; cleanup: () => void } {
  const parent = mkdtempSync(join(tmpdir(), 'portico-deploy-secrets-'));
  const dir = join(parent, 'out');
  execFileSync(
    process.execPath,
    [
      join(ROOT, 'scripts/kubernetes-secrets.ts'),
      '--out',
      dir,
      '--database-url',
      'postgres://portico:secret@postgresql:5432/portico',
      '--redis-url',
      'redis://redis:6379',
    ],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 },
  );
  const secrets = readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .flatMap((file) => parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((d) => d.toJS() as Doc));
  return { secrets, dir, cleanup: () => rmSync(parent, { recursive: true, force: true }) };
}

/**
 * A stage of deploy/Dockerfile (the final one unless `target` names one): its ENTRYPOINT and
 * its ENV, as a container built from it starts with them.
 */
export function dockerStage(target?: string): { entrypoint: string[]; env: Record<string, string> } {
  const stages = read('deploy/Dockerfile')
    .split(/^FROM /m)
    .slice(1);
  const stage =
    target === undefined ? stages.at(-1) : stages.find((s) => new RegExp(`AS ${target}\\s`).test(s));
  if (stage === undefined) throw new Error(`deploy/Dockerfile has no stage ${target}`);
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(stage)?.[1];
  const env: Record<string, string> = {};
  for (const [, line] of stage.matchAll(/^ENV (.+)$/gm))
    for (const pair of line!.split(/\s+/)) env[pair.split('=')[0]!] = pair.split('=').slice(1).join('=');
  return { entrypoint: entrypoint === undefined ? [] : (JSON.parse(entrypoint) as string[]), env };
}

/** Upper-case string literals of a process's sources: every variable it can read. */
export function variablesRead(dirs: readonly string[]): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith('.ts'))
        for (const match of read(path).matchAll(/['"`]([A-Z][A-Z0-9]*_[A-Z0-9_]+)['"`]/g))
          names.add(match[1]!);
    }
  };
  for (const dir of dirs) walk(dir);
  return names;
}

/** What each component's process reads: its own folder and shared/. */
export const GATEWAY_VARIABLES = () => variablesRead(['gateway', 'shared']);
export const SERVICE_VARIABLES = () => variablesRead(['resource-service', 'shared']);
