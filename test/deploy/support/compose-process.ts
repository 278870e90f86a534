/**
 * A service of deploy/compose.yaml run here as a process, as near as possible to how compose
 * runs it: the entrypoint (the Dockerfile's, or the service's own) and command, the image's ENV
 * and the service's environment, each named volume a directory shared by the services that
 * mount it, a bind mount its file. What cannot hold here is substituted and named: mount paths
 * become those directories (in arguments, variables and the mounted config), the built entry its
 * source, a compose service name `localhost`, and the ports the test chooses.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Doc } from './kustomize.ts';
import { dockerStage, ROOT } from './deploy-files.ts';

export interface ComposeRun {
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): string;
}

export class ComposeWorld {
  readonly root: string;
  /** `service:8081` → `localhost:<port>` and the like, in the mounted config. */
  readonly names: Map<string, string>;
  constructor(root: string, names: Map<string, string>) {
    this.root = root;
    this.names = names;
  }

  /** Each of `paths` where it stands as a whole path (not inside a longer one) in `text`. */
  private substitute(text: string, paths: Map<string, string>): string {
    let out = text;
    for (const [from, to] of [...paths].sort((a, b) => b[0].length - a[0].length)) {
      const escaped = from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      out = out.replace(new RegExp(`(?<![\\w./-])${escaped}(?=/|$|[\\s'",;])`, 'g'), () => to);
    }
    return out;
  }

  /** Mount path → directory or file here, for one service's volumes. */
  private mounts(service: Doc): Map<string, string> {
    const mounts = new Map<string, string>();
    for (const volume of (service['volumes'] ?? []) as string[]) {
      const [source, target] = volume.split(':') as [string, string];
      if (source.startsWith('.')) {
        // A bind mount of a config file: written here with the others' paths substituted.
        const file = join(this.root, `bind-${basename(target)}`);
        mounts.set(target, file);
        continue;
      }
      const dir = join(this.root, `volume-${source}`);
      mkdirSync(dir, { recursive: true });
      mounts.set(target, dir);
    }
    for (const volume of (service['volumes'] ?? []) as string[]) {
      const [source, target] = volume.split(':') as [string, string];
      if (!source.startsWith('.')) continue;
      const text = readFileSync(join(ROOT, 'deploy', source), 'utf8');
      writeFileSync(
        mounts.get(target)!,
        [...this.names].reduce(
          (out, [name, here]) => out.replaceAll(name, here),
          this.substitute(text, mounts),
        ),
      );
    }
    return mounts;
  }

  /** Starts `service` with `overrides` on top of its environment. */
  run(service: Doc, overrides: Record<string, string>): ComposeRun {
    const mounts = this.mounts(service);
    const image = dockerStage(service['build']?.target);
    const entrypoint = (service['entrypoint'] as string[] | undefined) ?? image.entrypoint;
    const argv = [...entrypoint, ...((service['command'] as string[] | undefined) ?? [])]
      .map((arg) => this.substitute(arg, mounts))
      .map((arg) => arg.replace(/^dist\/(.+)\.js$/, '$1.ts'));
    const env: Record<string, string> = { PATH: process.env['PATH']!, ...image.env };
    for (const [name, value] of Object.entries((service['environment'] ?? {}) as Record<string, string>))
      env[name] = this.substitute(String(value), mounts);
    const dataDir = mounts.get(env['PORTICO_DATA_DIR'] ?? '');
    if (dataDir !== undefined) env['PORTICO_DATA_DIR'] = dataDir;
    Object.assign(env, overrides);
    const [command, ...args] = argv as [string, ...string[]];
    const child = spawn(command === 'node' ? process.execPath : command, args, {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { child, exited, output: () => output };
  }
}
