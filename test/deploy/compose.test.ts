/**
 * deploy/compose.yaml as `docker compose up` runs it, checked offline (no container engine runs
 * here): gateways that wait for /readyz and outlast their drain, replicas that share no
 * writable file, one issuer and one set of keys for every gateway, every variable a process
 * reads, and a Redis Cluster profile that is whole.
 */
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../gateway/config/load.ts';
import { composeFile, GATEWAY_VARIABLES, read, SERVICE_VARIABLES } from './support/deploy-files.ts';
import type { Doc } from './support/kustomize.ts';

const compose = composeFile();
const services = compose['services'] as Record<string, Doc>;
const gateways = Object.entries(services).filter(([name]) => name.startsWith('gateway'));
const needsOf = (service: Doc): string[] =>
  Array.isArray(service['depends_on']) ? service['depends_on'] : Object.keys(service['depends_on'] ?? {});

describe('deploy/compose.yaml', () => {
  it('gateways wait for /readyz and stop later than they drain; the redis-cluster profile is whole', () => {
    expect(gateways.length).toBe(3);
    for (const [name, gateway] of gateways) {
      expect(JSON.stringify(gateway['healthcheck']), name).toContain('/readyz');
      expect(Number(/^(\d+)s$/.exec(gateway['stop_grace_period'])?.[1]) * 1000, name).toBeGreaterThan(25_000);
    }
    // Every name a service depends on is a service of the file.
    for (const [name, service] of Object.entries(services))
      for (const needed of needsOf(service))
        expect(Object.keys(services), `${name} depends on ${needed}`).toContain(needed);
    const cluster = services['gateway-cluster']!;
    expect(cluster['environment']['REDIS_URL']).toBeUndefined();
    for (const seed of String(cluster['environment']['REDIS_CLUSTER_NODES']).split(',')) {
      expect(Object.keys(services)).toContain(seed.split(':')[0]);
      expect(services[seed.split(':')[0]!]!['profiles']).toEqual(['redis-cluster']);
    }
  });

  it('no two services mount one volume writable: each gateway has its own data volume', () => {
    const writers = new Map<string, string[]>();
    for (const [name, service] of Object.entries(services))
      for (const volume of (service['volumes'] ?? []) as string[]) {
        const [source, , mode] = volume.split(':');
        if (source!.startsWith('.') || mode === 'ro') continue;
        writers.set(source!, [...(writers.get(source!) ?? []), name]);
      }
    for (const [volume, names] of writers) expect(names, volume).toHaveLength(1);
    for (const [name, gateway] of gateways)
      expect(
        (gateway['volumes'] as string[]).some((v) => v.endsWith(':/data')),
        name,
      ).toBe(true);
  });

  it('every gateway trusts the one issuer made before it starts, and no forwarding header', () => {
    const raw = parse(read('deploy/portico.yaml')) as Doc;
    const { config } = parseConfig(raw, { env: {} });
    expect(config.auth.jwt.jwksFile).toBe('/etc/portico/jwt/jwks.json');
    expect(raw['proxy']?.trustProxy ?? false).toBe(false);
    for (const [name, gateway] of gateways) {
      expect(gateway['depends_on']['issuer'], name).toEqual({ condition: 'service_completed_successfully' });
      expect(gateway['volumes'], name).toContain('issuer-jwks:/etc/portico/jwt:ro');
      expect(gateway['environment']['PORTICO_ADMIN_TOKEN'].length, name).toBeGreaterThanOrEqual(32);
    }
    expect(services['issuer']!['command'][0]).toContain('/jwks/jwks.json');
  });

  it('every variable each process gets is one its code reads', () => {
    const gatewayReads = GATEWAY_VARIABLES();
    const serviceReads = SERVICE_VARIABLES();
    const set = (service: Doc) => Object.keys(service['environment'] ?? {});
    const all = gateways.flatMap(([, gateway]) => set(gateway));
    expect(all).toEqual(expect.arrayContaining(['REDIS_URL', 'REDIS_CLUSTER_NODES', 'PORTICO_ADMIN_TOKEN']));
    expect(all.filter((n) => !gatewayReads.has(n))).toEqual([]);
    const service = set(services['service']!);
    expect(service).toContain('DATABASE_URL');
    expect(service.filter((n) => !serviceReads.has(n))).toEqual([]);
    expect(service).not.toContain('PORTICO_APIKEY_SIGNING_KEYS');
  });
});
