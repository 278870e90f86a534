/**
 * A container of a rendered pod, run here as a process as near as possible to how the kubelet
 * runs it: its command (the built entry swapped for the source it is built from), the image's
 * ENV, the pod's env and the Secrets it takes whole, its volumes as directories holding the
 * Secret and ConfigMap keys, and its declared ports. What cannot hold here is substituted and
 * named: each volume's mount path becomes a temporary directory, each declared port a free
 * one, `status.podIP` POD_IP (a loopback address that is not 127.0.0.1, so that a listener left
 * on 127.0.0.1 is not found there), a Service name `localhost`, and the image's data dir a path
 * nothing can be created under (as a read-only root file system would refuse it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../support/free-port.ts';
import type { Doc } from './kustomize.ts';
import { dockerStage, ROOT } from './deploy-files.ts';

/** The pod's address here: any 127/8 address reaches loopback on Linux. */
export const POD_IP = '127.0.0.2';

export interface PodProcess {
  child: ChildProcess;
  /** The local port standing for a container port, by the port's name or number. */
  port(nameOrNumber: string | number): number;
  output(): string;
  stop(): Promise<void>;
}

export interface PodInputs {
  /** Every Secret and ConfigMap the pod may name. */
  sources: Doc[];
  /** `https://service:8081` → `https://localhost:<local port>` for each name given. */
  services?: Map<string, string>;
  /** Variables that point a process at the test's own PostgreSQL, Redis and key prefix. */
  overrides: Record<string, string>;
}

const dataOf = (doc: Doc): Record<string, string> => ({
  ...Object.fromEntries(
    Object.entries(doc['data'] ?? {}).map(([k, v]) => [
      k,
      doc['kind'] === 'Secret' ? Buffer.from(String(v), 'base64').toString() : String(v),
    ]),
  ),
  ...(doc['stringData'] ?? {}),
});

/** Replaces every mount path, longest first, and every Service address in `text`. */
function substitute(text: string, paths: Map<string, string>, services: Map<string, string>): string {
  let out = text;
  for (const [from, to] of [...paths].sort((a, b) => b[0].length - a[0].length))
    out = out.replaceAll(from, to);
  for (const [from, to] of services) out = out.replaceAll(from, to);
  return out;
}

export async function runPodContainer(pod: Doc, inputs: PodInputs): Promise<PodProcess> {
  const container = pod['containers'][0];
  const source = (kind: string, name: string) => {
    const found = inputs.sources.find((d) => d['kind'] === kind && d['metadata'].name === name);
    if (found === undefined) throw new Error(`the pod needs ${kind} ${name}, which nothing provides`);
    return dataOf(found);
  };
  const root = mkdtempSync(join(tmpdir(), 'portico-pod-'));
  const paths = new Map<string, string>();
  const volumes: Doc[] = pod['volumes'] ?? [];
  const mounts: Doc[] = container['volumeMounts'] ?? [];
  for (const mount of mounts) paths.set(mount['mountPath'], join(root, mount['name']));
  for (const mount of mounts) {
    const volume = volumes.find((v) => v['name'] === mount['name'])!;
    const dir = paths.get(mount['mountPath'])!;
    mkdirSync(dir);
    const files = volume['secret']
      ? source('Secret', volume['secret'].secretName)
      : volume['configMap']
        ? source('ConfigMap', volume['configMap'].name)
        : {};
    // A config file names the other mounts and the Services: those are substituted in it.
    for (const [key, text] of Object.entries(files))
      writeFileSync(
        join(dir, key),
        key.endsWith('.yaml') ? substitute(text, paths, inputs.services ?? new Map()) : text,
      );
  }
  const ports = new Map<string | number, number>();
  for (const declared of container['ports'] ?? []) {
    const local = await freePort();
    ports.set(declared['containerPort'], local);
    if (declared['name'] !== undefined) ports.set(declared['name'], local);
  }
  const env: Record<string, string> = { PATH: process.env['PATH']!, ...dockerStage().env };
  for (const from of container['envFrom'] ?? []) Object.assign(env, source('Secret', from['secretRef'].name));
  for (const entry of container['env'] ?? []) {
    if (entry['valueFrom']?.fieldRef?.fieldPath === 'status.podIP') env[entry['name']] = POD_IP;
    else if (entry['value'] !== undefined) {
      const asPort = ports.get(Number(entry['value']));
      env[entry['name']] =
        asPort === undefined ? substitute(entry['value'], paths, new Map()) : String(asPort);
    }
  }
  // The image's data dir, unwritable: a process that would make per-pod state fails its start.
  env['PORTICO_DATA_DIR'] = '/proc/portico-no-data-dir';
  Object.assign(env, inputs.overrides);
  return spawnContainer(container, env, ports, root);
}

function spawnContainer(
  container: Doc,
  env: Record<string, string>,
  ports: Map<string | number, number>,
  root: string,
): PodProcess {
  const [command, ...args] = (container['command'] as string[]).map((arg) =>
    arg.replace(/^dist\/(.+)\.js$/, '$1.ts'),
  );
  if (command !== 'node') throw new Error(`the container runs ${command}, not node`);
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    port(nameOrNumber) {
      const local = ports.get(nameOrNumber);
      if (local === undefined) throw new Error(`the container declares no port ${nameOrNumber}`);
      return local;
    },
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
