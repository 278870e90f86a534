/**
 * A small network of hosts on this machine: one network namespace per host, each with a veth
 * pair into one bridge (a switch) that also carries an address of the test process, so the
 * test reaches every host as a client on the network would. iproute2, as root.
 *
 * Everything made (processes inside the namespaces, namespaces, veths, the bridge) is removed
 * by `close`, and by a synchronous handler if the test process exits first.
 */
import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface Host {
  /** The namespace's name. */
  name: string;
  address: string;
  /** Starts `command` inside the host (its network only: same files, same users). */
  run(command: string[], options?: SpawnOptions): ChildProcess;
  /** Pulls the host's cable out (the bridge end of its link goes down), and puts it back. */
  unplug(): void;
  plug(): void;
}

export interface HostNetwork {
  /** The test process's own address on the network. */
  address: string;
  host(label: string): Host;
  close(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** Why namespaces cannot be made here, or undefined when they can. */
export function namespacesUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'network namespaces need root (run the tests as root, as CI does)';
  const probe = `pt-probe-${randomBytes(3).toString('hex')}`;
  try {
    ip('netns', 'add', probe);
    ip('netns', 'del', probe);
    return undefined;
  } catch (error) {
    const detail = String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim();
    return `cannot make a network namespace (ip netns add: ${detail || 'failed'}); is iproute2 installed?`;
  }
}

/** A /24 in 10.0.0.0/8 that no route of this machine uses yet. */
function freeSubnet(): string {
  const routes = ip('route');
  for (;;) {
    const subnet = `10.${200 + (randomBytes(1)[0]! % 50)}.${randomBytes(1)[0]}`;
    if (!routes.includes(`${subnet}.`)) return subnet;
  }
}

export function createHostNetwork(): HostNetwork {
  const id = randomBytes(2).toString('hex');
  const subnet = freeSubnet();
  const bridge = `pt${id}br`;
  const namespaces: string[] = [];
  const links: string[] = [];

  const close = () => {
    for (const ns of namespaces.splice(0)) {
      const pids = (() => {
        try {
          return ip('netns', 'pids', ns).split('\n').filter(Boolean);
        } catch {
          return [];
        }
      })();
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      try {
        ip('netns', 'del', ns); // its veth end goes with it, and so the pair
      } catch {
        // already gone
      }
    }
    // Deleting a namespace frees its veth pair only once the kernel has let go of the
    // namespace (sockets in it may hold it a while): the pairs go now, by their outer end.
    for (const link of [...links.splice(0), bridge]) {
      try {
        ip('link', 'del', link);
      } catch {
        // already gone
      }
    }
    process.off('exit', close);
  };
  process.on('exit', close);

  ip('link', 'add', bridge, 'type', 'bridge');
  ip('addr', 'add', `${subnet}.1/24`, 'dev', bridge);
  ip('link', 'set', bridge, 'up');

  return {
    address: `${subnet}.1`,
    host(label) {
      const index = namespaces.length + 2;
      const name = `pt-${id}-${label}`;
      const [outer, inner] = [`pt${id}v${index}`, `pt${id}n${index}`];
      namespaces.push(name);
      links.push(outer);
      ip('netns', 'add', name);
      ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner);
      ip('link', 'set', inner, 'netns', name);
      ip('link', 'set', outer, 'master', bridge);
      ip('link', 'set', outer, 'up');
      const inside = (...args: string[]) => ip('netns', 'exec', name, 'ip', ...args);
      inside('addr', 'add', `${subnet}.${index}/24`, 'dev', inner);
      inside('link', 'set', inner, 'up');
      inside('link', 'set', 'lo', 'up');
      return {
        name,
        address: `${subnet}.${index}`,
        run: (command, options = {}) => spawn('ip', ['netns', 'exec', name, ...command], options),
        unplug: () => void ip('link', 'set', outer, 'down'),
        plug: () => void ip('link', 'set', outer, 'up'),
      };
    },
    close,
  };
}
