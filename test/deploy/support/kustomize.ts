/**
 * Renders a kustomization the way `kubectl apply -k` does, for the few features
 * deploy/kubernetes uses (resources, namespace, configMapGenerator with its name hash off,
 * images, replicas, inline JSON patches). No kustomize binary ships with the project, so the
 * tests render with this and, where `kubectl` is installed, compare with `kubectl kustomize`
 * (kustomize-render.test.ts): the real tool is the judge of this stand-in.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

export type Doc = Record<string, any>;

/** Kinds that live in no namespace. */
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);

interface Kustomization {
  resources?: string[];
  namespace?: string;
  configMapGenerator?: { name: string; files?: string[]; options?: { disableNameSuffixHash?: boolean } }[];
  images?: { name: string; newName?: string; newTag?: string; digest?: string }[];
  replicas?: { name: string; count: number }[];
  /** JSON patches (RFC 6902) inline; this stand-in applies `remove` and `replace`. */
  patches?: { target: { kind: string; name: string }; patch: string }[];
}

/** The objects `kubectl kustomize dir` would print, in the order of their resources. */
export function renderKustomization(dir: string): Doc[] {
  const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  const docs: Doc[] = [];
  for (const resource of k.resources ?? []) {
    const path = join(dir, resource);
    if (statSync(path).isDirectory()) docs.push(...renderKustomization(path));
    else docs.push(...parseAllDocuments(readFileSync(path, 'utf8')).map((d) => d.toJS() as Doc));
  }
  for (const generator of k.configMapGenerator ?? []) {
    if (generator.options?.disableNameSuffixHash !== true)
      throw new Error(`configMapGenerator ${generator.name}: the test renderer supports no name hash`);
    const data = Object.fromEntries(
      (generator.files ?? []).map((file) => [basename(file), readFileSync(join(dir, file), 'utf8')]),
    );
    docs.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: generator.name }, data });
  }
  for (const doc of docs) applyOverrides(doc, k);
  for (const { target, patch } of k.patches ?? [])
    for (const doc of docs.filter((d) => d['kind'] === target.kind && d['metadata'].name === target.name))
      applyJsonPatch(doc, JSON.parse(patch) as { op: string; path: string; value?: unknown }[]);
  return docs;
}

function applyJsonPatch(doc: Doc, operations: { op: string; path: string; value?: unknown }[]): void {
  for (const { op, path, value } of operations) {
    const keys = path.split('/').slice(1);
    const last = keys.pop()!;
    const parent = keys.reduce((node: Doc, key) => node[key], doc);
    if (op === 'remove') delete parent[last];
    else if (op === 'replace') parent[last] = value;
    else throw new Error(`the test renderer applies no JSON patch op ${op}`);
  }
}

function applyOverrides(doc: Doc, k: Kustomization): void {
  if (k.namespace !== undefined && !CLUSTER_SCOPED.has(doc['kind'])) doc['metadata'].namespace = k.namespace;
  const replicas = k.replicas?.find((r) => r.name === doc['metadata'].name);
  if (replicas !== undefined && doc['spec']?.replicas !== undefined) doc['spec'].replicas = replicas.count;
  const pod = doc['spec']?.template?.spec;
  for (const container of [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])]) {
    const [name] = String(container.image).split(/[:@]/);
    const image = k.images?.find((i) => i.name === name);
    if (image === undefined) continue;
    const newName = image.newName ?? name;
    container.image =
      image.digest !== undefined ? `${newName}@${image.digest}` : `${newName}:${image.newTag ?? 'latest'}`;
  }
}

/** `kubectl kustomize dir`, or undefined where kubectl is not installed. */
export function kubectlKustomize(dir: string): Doc[] | undefined {
  const kubectl = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((path) => existsSync(path));
  if (kubectl === undefined) return undefined;
  const out = execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  return parseAllDocuments(out).map((d) => d.toJS() as Doc);
}
