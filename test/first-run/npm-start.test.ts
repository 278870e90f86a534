/**
 * `npm start` as a user runs it, through npm itself: SIGTERM or SIGINT to the npm process stops
 * every process under it (npm hands the signal to the shell running the script, which dies
 * without passing it on), and the banner tells the truth about tokens: the data dir in the
 * token hint when it is not the default, and no development token once another issuer is
 * trusted, whose name it prints instead.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { bareEnv } from './support/portico-process.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Every process whose parent chain leads to `pid`, from /proc. */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name may hold spaces and parentheses: fields start after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // Gone between the listing and the read.
    }
  }
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of parents)
      if (ppid === parent) {
        found.push(child);
        walk(child);
      }
  };
  walk(pid);
  return found;
}

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/\) Z /.test(safeStat(pid));
function safeStat(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return '';
  }
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

interface NpmStart {
  npm: ChildProcess;
  banner: string;
  output: () => string;
}

/** `npm start` on a fresh data dir; resolves once the banner's curl line is out. */
async function npmStart(extraEnv: NodeJS.ProcessEnv = {}): Promise<NpmStart & { dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'portico-npm-start-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...bareEnv(dataDir, extraEnv), npm_config_update_notifier: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // Whatever a failed assertion leaves running is killed, the whole tree.
  cleanups.push(() => {
    for (const pid of [...descendants(npm.pid!), npm.pid!]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });
  const banner = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start not ready in 60 s:\n${output}`)), 60_000);
    npm.once('exit', (code) => reject(new Error(`npm start exited ${code}:\n${output}`)));
    let text = '';
    createInterface({ input: npm.stdout }).on('line', (line) => {
      output += `${line}\n`;
      text += `${line}\n`;
      if (line.startsWith('curl ')) {
        clearTimeout(timer);
        resolve(text);
      }
    });
  });
  return { npm, banner, output: () => output, dataDir };
}

async function stopsEverything(run: NpmStart, signal: NodeJS.Signals): Promise<void> {
  const tree = descendants(run.npm.pid!);
  // The script's node (the npm script execs it, so npm hands signals to it directly).
  expect(tree.some((pid) => commandLine(pid).includes('scripts/start.ts'))).toBe(true);
  const npmExited = new Promise((resolve) => run.npm.once('exit', resolve));
  process.kill(run.npm.pid!, signal);
  await npmExited;
  await expect.poll(() => tree.filter(alive), { timeout: 20_000, interval: 200 }).toEqual([]);
}

describe('npm start under signals', () => {
  it('SIGTERM to npm stops every process under it; the token hint names the data dir', async () => {
    const run = await npmStart({ LOG_LEVEL: 'info' });
    expect(run.banner).toContain(`PORTICO_DATA_DIR=${run.dataDir} npm run -s token -- --customer demo-bob`);
    expect(run.banner).toMatch(/^export TOKEN=ey/m);
    // The log's `started` line is out before the banner, not a batch flush later: the banner
    // ends what the start prints, and whoever reads the output for the start's steps has them.
    expect(run.banner).toMatch(/"msg":"started"[^\n]*\n(?:.*\n)*Portico is running/);
    expect(run.banner).toMatch(
      /^ {2}Issuer +urn:portico:dev-issuer, the development issuer of the data dir$/m,
    );
    await stopsEverything(run, 'SIGTERM');
  }, 90_000);

  it('SIGINT to npm stops every process under it', async () => {
    const run = await npmStart();
    await stopsEverything(run, 'SIGINT');
  }, 90_000);
});

describe("npm start's memory", () => {
  it('the embedded database runs on baseline code: the start peaks far below 800 MiB', async () => {
    const run = await npmStart();
    const node = descendants(run.npm.pid!).find((pid) => commandLine(pid).includes('scripts/start.ts'));
    expect(node).toBeDefined();
    // VmHWM, the most the process held at once. With V8's optimising compiler PGlite's
    // WebAssembly (a 9 MB module) peaked at 795 MiB in a cold start, while its first statements
    // ran; with --liftoff-only in the start script, 264-283 MiB (docs/performance.md).
    const peakKiB = Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${node}/status`, 'utf8'))?.[1]);
    expect(peakKiB / 1024).toBeGreaterThan(50);
    expect(peakKiB / 1024).toBeLessThan(500);
    await stopsEverything(run, 'SIGTERM');
  }, 90_000);
});

describe('npm start trusting another issuer', () => {
  it('names the issuer and prints no development token', async () => {
    // A JWKS endpoint on loopback; the keys need not match anything: no token is verified here.
    const jwks: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end('{"keys":[]}');
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          jwks.closeAllConnections();
          jwks.close(() => resolve());
        }),
    );
    const dir = mkdtempSync(join(tmpdir(), 'portico-issuer-config-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const configFile = join(dir, 'portico.json');
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`;
    writeFileSync(
      configFile,
      JSON.stringify({
        auth: {
          jwt: {
            issuer: 'https://idp.example.com/',
            audience: 'https://api.example.com',
            jwksUrl,
            customerClaim: 'https://example.com/customer',
          },
        },
      }),
    );
    const run = await npmStart({ PORTICO_CONFIG: configFile });
    expect(run.banner).toContain(
      `  Issuer   https://idp.example.com/ (keys ${jwksUrl}, audience https://api.example.com, customer claim https://example.com/customer)`,
    );
    expect(run.banner).not.toMatch(/export TOKEN=/);
    expect(run.banner).not.toMatch(/ey[A-Za-z0-9_-]{10,}\./);
    expect(run.banner).toContain('Tokens come from https://idp.example.com/');
    await stopsEverything(run, 'SIGTERM');
  }, 90_000);
});
