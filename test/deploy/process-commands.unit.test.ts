/**
 * Every deployment starts the gateway and the resource service with the commands of their npm
 * scripts (`gateway`, `service`), node flags included: the bench and the soak measure those
 * commands (measure/bench/processes.ts, measure/soak/stack.ts), so an image, a compose service
 * or a pod started otherwise would run with memory and CPU figures nobody measured.
 */
import { describe, expect, it } from 'vitest';
import { composeFile, find, kubernetesObjects, read } from './support/deploy-files.ts';

/** `node [flags] FILE.js`, as package.json's script of that name writes it. */
function npmScriptCommand(script: string): string[] {
  const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
  return scripts[script]!.split(' ').filter((part) => part !== '');
}

/** The command of the container named `name` in the Deployment of that name. */
function kubernetesCommand(name: string): unknown {
  const deployment = find(kubernetesObjects(), 'Deployment', name);
  const containers = deployment['spec'].template.spec.containers as { name: string; command: string[] }[];
  return containers.find((container) => container.name === name)?.command;
}

/** `node [flags] ENTRY`: node itself, then the built entry point last. */
function expectNodeRunning(command: string[], entry: string): void {
  expect(command[0]).toBe('node');
  expect(command.at(-1)).toBe(entry);
}

const composeServices = () => composeFile()['services'] as Record<string, { command?: unknown }>;

describe('the gateway command of every deployment', () => {
  const expected = npmScriptCommand('gateway');

  it('is node with flags and the built entry point', () => {
    expectNodeRunning(expected, 'dist/gateway/main.js');
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
    const gateways = Object.entries(composeServices()).filter(([, service]) =>
      JSON.stringify(service.command ?? '').includes('dist/gateway/main.js'),
    );
    expect(gateways.length).toBeGreaterThanOrEqual(1);
    for (const [name, service] of gateways) expect(service.command, name).toEqual(expected);
  });

  it('is the command of the Kubernetes gateway container', () => {
    expect(kubernetesCommand('gateway')).toEqual(expected);
  });
});

describe('the resource service command of every deployment', () => {
  const expected = npmScriptCommand('service');

  it('is node with flags and the built entry point', () => {
    expectNodeRunning(expected, 'dist/resource-service/main.js');
  });

  it('is the command of the compose service', () => {
    expect(composeServices()['service']?.command).toEqual(expected);
  });

  it('is the command of the Kubernetes service container', () => {
    expect(kubernetesCommand('service')).toEqual(expected);
  });
});
