/**
 * Every deployment starts the gateway with the command of the `gateway` npm script, node flags
 * included: the bench measures that script's command (measure/bench/processes.ts), so an image,
 * a compose service or a pod started otherwise would run with memory and CPU figures nobody
 * measured.
 */
import { describe, expect, it } from 'vitest';
import { composeFile, find, kubernetesObjects, read } from './support/deploy-files.ts';

/** `node [flags] dist/gateway/main.js`, as package.json's `gateway` script writes it. */
function npmScriptCommand(): string[] {
  const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
  return scripts['gateway']!.split(' ').filter((part) => part !== '');
}

describe('the gateway command of every deployment', () => {
  const expected = npmScriptCommand();

  it('is node with flags and the built entry point', () => {
    expect(expected[0]).toBe('node');
    expect(expected.at(-1)).toBe('dist/gateway/main.js');
  });

  it('is the image default (the Dockerfile CMD of its last stage)', () => {
    const lastStage = read('deploy/Dockerfile')
      .split(/^FROM /m)
      .at(-1)!;
    const cmd = /^CMD (\[.*\])$/m.exec(lastStage)?.[1];
    expect(cmd, 'a CMD in exec form').toBeDefined();
    expect(JSON.parse(cmd!)).toEqual(expected);
  });

  it('is the command of the compose gateways', () => {
    const services = composeFile()['services'] as Record<string, { command?: unknown }>;
    const gateways = Object.entries(services).filter(([, service]) =>
      JSON.stringify(service.command ?? '').includes('dist/gateway/main.js'),
    );
    expect(gateways.length).toBeGreaterThanOrEqual(1);
    for (const [name, service] of gateways) expect(service.command, name).toEqual(expected);
  });

  it('is the command of the Kubernetes gateway container', () => {
    const deployment = find(kubernetesObjects(), 'Deployment', 'gateway');
    const container = (
      deployment['spec'].template.spec.containers as { name: string; command: string[] }[]
    ).find((c) => c.name === 'gateway');
    expect(container?.command).toEqual(expected);
  });
});
