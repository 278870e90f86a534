/**
 * The "restricted" Pod Security Standard (kubernetes.io/docs/concepts/security/pod-security-standards,
 * baseline and restricted controls), as a table of our own: each rule names the control and
 * returns what in a pod spec breaks it. A namespace labelled
 * `pod-security.kubernetes.io/enforce: restricted` refuses any pod that breaks one, so these
 * checks run offline what the API server would refuse on apply.
 */
import type { Doc } from './kustomize.ts';

export interface PodRule {
  control: string;
  /** One line per violation, naming the container or volume. */
  violations(pod: Doc): string[];
}

const ALLOWED_VOLUME_KINDS = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
]);

function containers(pod: Doc): Doc[] {
  return [
    ...(pod['initContainers'] ?? []),
    ...(pod['containers'] ?? []),
    ...(pod['ephemeralContainers'] ?? []),
  ];
}

/** A container setting, or the pod's when the container leaves it out. */
function effective(pod: Doc, container: Doc, key: string): unknown {
  return container['securityContext']?.[key] ?? pod['securityContext']?.[key];
}

const perContainer =
  (test: (container: Doc, pod: Doc) => string | undefined) =>
  (pod: Doc): string[] =>
    containers(pod).flatMap((c) => {
      const problem = test(c, pod);
      return problem === undefined ? [] : [`container ${c['name']}: ${problem}`];
    });

export const RESTRICTED_RULES: readonly PodRule[] = [
  {
    control: 'Host namespaces (hostNetwork, hostPID, hostIPC unset or false)',
    violations: (pod) => ['hostNetwork', 'hostPID', 'hostIPC'].filter((key) => pod[key] === true),
  },
  {
    control: 'Privileged containers',
    violations: perContainer((c) => (c['securityContext']?.privileged === true ? 'privileged' : undefined)),
  },
  {
    control: 'HostProcess',
    violations: perContainer((c, pod) =>
      (effective(pod, c, 'windowsOptions') as Doc | undefined)?.['hostProcess'] === true
        ? 'hostProcess'
        : undefined,
    ),
  },
  {
    control: 'Host ports unset or 0',
    violations: perContainer((c) =>
      (c['ports'] ?? []).some((p: Doc) => (p['hostPort'] ?? 0) !== 0) ? 'hostPort' : undefined,
    ),
  },
  {
    control:
      'Volume types (no hostPath; only configMap, csi, downwardAPI, emptyDir, ephemeral, PVC, projected, secret)',
    violations: (pod) =>
      (pod['volumes'] ?? []).flatMap((volume: Doc) =>
        Object.keys(volume)
          .filter((key) => key !== 'name' && !ALLOWED_VOLUME_KINDS.has(key))
          .map((key) => `volume ${volume['name']}: ${key}`),
      ),
  },
  {
    control: 'Privilege escalation: allowPrivilegeEscalation false',
    violations: perContainer((c) =>
      c['securityContext']?.allowPrivilegeEscalation === false
        ? undefined
        : 'allowPrivilegeEscalation not false',
    ),
  },
  {
    control: 'Running as non-root: runAsNonRoot true',
    violations: perContainer((c, pod) =>
      effective(pod, c, 'runAsNonRoot') === true ? undefined : 'runAsNonRoot not true',
    ),
  },
  {
    control: 'Running as non-root user: runAsUser not 0',
    violations: perContainer((c, pod) => (effective(pod, c, 'runAsUser') === 0 ? 'runAsUser 0' : undefined)),
  },
  {
    control: 'Seccomp: RuntimeDefault or Localhost',
    violations: perContainer((c, pod) => {
      const type = (effective(pod, c, 'seccompProfile') as Doc | undefined)?.['type'];
      return type === 'RuntimeDefault' || type === 'Localhost'
        ? undefined
        : `seccompProfile ${type ?? 'unset'}`;
    }),
  },
  {
    control: 'Capabilities: drop ALL, add nothing but NET_BIND_SERVICE',
    violations: perContainer((c) => {
      const caps = c['securityContext']?.capabilities ?? {};
      if (!(caps['drop'] ?? []).includes('ALL')) return 'capabilities do not drop ALL';
      const added = (caps['add'] ?? []).filter((cap: string) => cap !== 'NET_BIND_SERVICE');
      return added.length === 0 ? undefined : `adds ${added.join(', ')}`;
    }),
  },
  {
    control: 'AppArmor, SELinux, /proc mount and sysctls left at their defaults',
    violations: (pod) => [
      ...perContainer((c) => {
        const sc = c['securityContext'] ?? {};
        if (sc['procMount'] !== undefined && sc['procMount'] !== 'Default') return 'procMount';
        if (sc['seLinuxOptions']?.user !== undefined || sc['seLinuxOptions']?.role !== undefined)
          return 'seLinuxOptions user/role';
        if (sc['appArmorProfile']?.type === 'Unconfined') return 'appArmorProfile Unconfined';
        return undefined;
      })(pod),
      ...(pod['securityContext']?.sysctls ?? [])
        .filter((s: Doc) => !SAFE_SYSCTLS.has(s['name']))
        .map((s: Doc) => `sysctl ${s['name']}`),
    ],
  },
];

/**
 * Ours, beyond the standard: the kubelet checks runAsNonRoot against the image's USER, which it
 * can only do for a number ("image has non-numeric user" otherwise), so every container names
 * its user and group by number.
 */
export const NUMERIC_IDENTITY_RULE: PodRule = {
  control: 'Numeric runAsUser and runAsGroup (the kubelet cannot check a user name)',
  violations: perContainer((c, pod) =>
    Number.isInteger(effective(pod, c, 'runAsUser')) && Number.isInteger(effective(pod, c, 'runAsGroup'))
      ? undefined
      : 'runAsUser/runAsGroup not numeric',
  ),
};

/** Every violation of `pod`, each prefixed with the control it breaks. */
export function podViolations(pod: Doc): string[] {
  return [...RESTRICTED_RULES, NUMERIC_IDENTITY_RULE].flatMap((rule) =>
    rule.violations(pod).map((v) => `${rule.control}: ${v}`),
  );
}
