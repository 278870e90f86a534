/**
 * Every command the README and docs/*.md show runs in a test, or is exempt for a reason said
 * here. The commands are taken from the documents themselves: each line of a shell code block
 * (continued lines and quotes joined) and each inline code span that starts with a command
 * the product ships (`npm run`, `npx vitest`, `node scripts/`, ...). Each must match a rule
 * below: RUN rules are executed for real by this file (cheap ones, in a scratch data dir),
 * TESTED rules name the test that runs the same thing, EXEMPT rules say why nothing here can.
 * A command added to a document with no rule fails the first test, so the list cannot rot.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../support/run-command.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
/** Inline code spans that are commands, as opposed to file names or words. */
const INLINE_COMMAND =
  /^(npm (run|ci|start|test)|npx |node (scripts|measure|dist|\.\.)\/|bash |source |kubectl |docker |curl -)/;
const SHELL_FENCE = /^```(sh|bash|shell)?\n([\s\S]*?)^```/gm;
const COMMAND_WORD = /^(npm|npx|node|curl|docker|kubectl|bash|source|for|CA=)\b/;

type Rule =
  | { pattern: RegExp; run: string }
  | { pattern: RegExp; tested: string }
  | { pattern: RegExp; exempt: string };

const RULES: Rule[] = [
  // Run here, for real.
  { pattern: /^npm run -s check( \[?-- (FILE|\S+\.ya?ml)\]?)?$/, run: 'check' },
  { pattern: /^npm run gateway -- --check FILE$/, run: 'check' },
  { pattern: /^npm run -s token( -- --customer .*)?$/, run: 'token' },
  { pattern: /^npm run -s apikey( -- (create|list|revoke).*)?$/, run: 'apikey' },
  { pattern: /^npm run -s audit -- verify \S+$/, run: 'audit' },
  { pattern: /^npx vitest run (test\/\S+ ?)+( -t \S+)?$/, run: 'vitest paths' },
  // Run by another test, the same command or the same requests.
  {
    pattern: /^npm ci( && npm test)?$|^npm test$|^bash \.ci\/run$|^npm run test:unit$/,
    tested: 'the CI itself (.ci/run runs npm ci && npm test)',
  },
  {
    pattern: /^npm ci && npm start$|^npm start$/,
    tested: 'test/first-run/zero-config.test.ts and npm-start.test.ts',
  },
  {
    pattern: /^node -e "(const ws = )?new \(require\('ws'\)|^curl -si --http1\.1 .*\/v1\/echo /,
    tested:
      'test/gateway/websocket/handshake.test.ts (the same echo and 101 handshake through the gateway, with ws)',
  },
  {
    pattern: /^(CA=|curl .*\$CA\b|for i in \$\(seq)/,
    tested: "the README's API tour: test/docs/readme-tour.test.ts runs each line with curl",
  },
  {
    pattern: /^npm run -s docs:config$|^npm run docs:config$/,
    tested: 'test/gateway/config/config.unit.test.ts (staleness)',
  },
  {
    pattern: /^npm run -s revoke-token( \[?-- .*)?( < token)?$/,
    tested: 'test/gateway/identity/introspection-revocation.test.ts (two gateways sharing Redis)',
  },
  {
    pattern: /^npm run -s reload$/,
    tested: 'test/gateway/lifecycle/reload-command.test.ts (against a running gateway)',
  },
  { pattern: /^node scripts\/internal-ca\.ts /, tested: 'test/scripts/internal-ca.test.ts' },
  {
    pattern: /^npm run -s api:compat /,
    tested: 'test/scripts/api-compat.unit.test.ts; .ci/run runs the gate',
  },
  { pattern: /^curl -X POST .*\/cache\/purge/, tested: 'test/gateway/admin/admin-purge.test.ts' },
  {
    pattern: /^node -e "require\('http'\)|^curl -N --compressed .*\/v1\/ticks$/,
    tested: 'test/gateway/edge/event-stream.test.ts (the same stream through the gateway)',
  },
  // Exempt: nothing here can run them.
  {
    pattern: /^docker /,
    exempt: 'needs a container runtime, absent here; test/deploy checks the compose file',
  },
  {
    pattern: /^kubectl /,
    exempt: 'needs a Kubernetes cluster; test/deploy renders and checks the manifests',
  },
  { pattern: /^curl -k .*<that token>/, exempt: 'the compose deployment: needs a container runtime' },
  {
    pattern: /^npm run (-s )?(bench|soak|measure:\S+)( .*)?$|^node measure\//,
    exempt: 'measurements of minutes on an idle machine; docs/performance.md says how to run them',
  },
  {
    pattern: /^sha=\$\(redis-cli script load |^redis-benchmark /,
    exempt: "a measurement of the Redis node's throughput (docs/performance.md, capacity model)",
  },
  {
    pattern: /^npm run (gateway|service)( \| npm run (gateway|service))?( .*)?$|^node dist\//,
    exempt: 'run the built output; .ci/run builds it and the image runs it',
  },
  {
    pattern: /^node \.\.\/shared\/tools\//,
    exempt: 'a tool outside this repository (the session machinery)',
  },
];

/** Every command in the documents: `{ file, command }`, in document order. */
function documentedCommands(): { file: string; command: string }[] {
  const found: { file: string; command: string }[] = [];
  for (const file of DOCUMENTS) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const block of text.matchAll(SHELL_FENCE)) {
      const lines = shellLines(block[2] ?? '');
      // An untagged block is a command block only when it opens with one (not a log excerpt).
      if (block[1] === undefined && !COMMAND_WORD.test(lines[0] ?? '')) continue;
      for (const command of lines) found.push({ file, command });
    }
    const prose = text.replace(SHELL_FENCE, '').replace(/^```[\s\S]*?^```/gm, '');
    for (const span of prose.matchAll(/`([^`\n]+)`/g)) {
      const command = (span[1] ?? '').trim();
      if (INLINE_COMMAND.test(command)) found.push({ file, command });
    }
  }
  return found;
}

/** A block's commands: comments and `# →` output dropped, `\` and open quotes continued. */
function shellLines(block: string): string[] {
  const commands: string[] = [];
  let pending = '';
  for (const raw of block.split('\n')) {
    const line = pending === '' ? raw.trim() : raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    pending = pending === '' ? line : `${pending} ${line}`;
    if (pending.endsWith('\\')) {
      pending = pending.slice(0, -1).trimEnd();
      continue;
    }
    if ((pending.match(/"/g) ?? []).length % 2 === 1) continue;
    commands.push(pending.replace(/\s+#( .*)?$/, '').trim());
    pending = '';
  }
  if (pending !== '') commands.push(pending);
  return commands;
}

const ruleOf = (command: string): Rule | undefined => RULES.find((rule) => rule.pattern.test(command));
const commands = documentedCommands();
const dir = mkdtempSync(join(tmpdir(), 'portico-doc-commands-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The commands' own environment: a scratch data dir, no Redis, Node 24 from this process. */
const env = (): NodeJS.ProcessEnv => ({
  PATH: process.env['PATH'],
  HOME: process.env['HOME'],
  PORTICO_DATA_DIR: dir,
});
const npm = (args: string[], extraEnv: NodeJS.ProcessEnv = {}) =>
  runCommand('npm', ['run', '-s', ...args], { cwd: ROOT, env: { ...env(), ...extraEnv }, timeoutMs: 60_000 });

describe('the commands the docs show', () => {
  it('are found, and each has a rule: run here, run by a named test, or exempt for a reason', () => {
    expect(commands.length).toBeGreaterThan(30);
    const without = commands.filter(({ command }) => ruleOf(command) === undefined);
    expect(without.map(({ file, command }) => `${file}: ${command}`)).toEqual([]);
  });

  it('tested ones name a test file that exists', () => {
    for (const rule of RULES) {
      if (!('tested' in rule)) continue;
      for (const path of rule.tested.match(/test\/\S+\.ts/g) ?? [])
        expect(existsSync(join(ROOT, path.replace(/[,;)]$/, ''))), path).toBe(true);
    }
  });

  const runs = (key: string) =>
    commands.filter(({ command }) => {
      const rule = ruleOf(command);
      return rule !== undefined && 'run' in rule && rule.run === key;
    });

  it('npm run -s check judges the shipped config (exit 0) and a broken one (exit 1), starting nothing', async () => {
    expect(runs('check').length).toBeGreaterThan(0);
    const good = await npm(['check', '--', 'deploy/portico.yaml'], { NODE_ENV: 'production' });
    expect(good.code, good.stderr).toBe(0);
    const broken = join(dir, 'broken.yaml');
    writeFileSync(broken, 'routes:\n  - { prefix: /v1, upstream: nowhere }\n');
    const bad = await npm(['check', '--', broken]);
    expect(bad.code).toBe(1);
    expect(bad.stderr + bad.stdout).toContain('routes[0].upstream');
  });

  it('npm run -s token and apikey create, list and revoke work in a fresh data dir', async () => {
    expect(runs('token').length + runs('apikey').length).toBeGreaterThan(0);
    const token = await npm(['token', '--', '--customer', 'demo-alice']);
    expect(token.code, token.stderr).toBe(0);
    expect(token.stdout.trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const created = await npm(['apikey', '--', 'create', '--customer', 'demo-alice']);
    expect(created.code, created.stderr).toBe(0);
    const id = /ak_[A-Za-z0-9_-]+/.exec(created.stderr)?.[0];
    expect(id, created.stderr).toBeDefined();
    const listed = await npm(['apikey', '--', 'list']);
    expect(listed.stdout).toContain(id);
    expect((await npm(['apikey', '--', 'revoke', id!])).code).toBe(0);
  });

  it('npm run -s audit -- verify says a file it cannot read is unreadable (exit 2)', async () => {
    expect(runs('audit').length).toBeGreaterThan(0);
    const result = await npm(['audit', '--', 'verify', join(dir, 'no-such-audit.log')]);
    expect(result.code).toBe(2);
  });

  it('npx vitest run names test files that exist, and -t a test they hold', () => {
    const shown = runs('vitest paths');
    expect(shown.length).toBeGreaterThan(0);
    for (const { command } of shown) {
      const words = command.split(/\s+/).slice(3);
      const name = words.includes('-t') ? words[words.indexOf('-t') + 1] : undefined;
      const paths = words.filter((word) => word.startsWith('test/'));
      for (const path of paths) expect(existsSync(join(ROOT, path)), command).toBe(true);
      if (name !== undefined)
        expect(
          paths.some((path) => readFileSync(join(ROOT, path), 'utf8').includes(name)),
          command,
        ).toBe(true);
    }
  });
});
