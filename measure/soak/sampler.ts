/**
 * What the soak watches in the two processes, sampled every few seconds: resident memory and
 * open file descriptors from /proc (Linux), heap from what each process reports of itself,
 * and the Redis connections: the gateway's own, and the server's total.
 *
 * Heap: both processes run with measure/soak/memory-report.ts preloaded, which writes heap
 * used just after the latest major collection (and heap total) to a file once a second; see
 * there why that, and not the gateway's instantaneous `nodejs_heap_size_used_bytes`.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { MemoryRecord } from './memory-report.ts';

const MiB = 1024 * 1024;
/** A record older than this is not the process's current state (it is stuck): not used. */
const STALE_RECORD_MS = 5000;

export interface ProcessSample {
  rssMiB: number;
  /** VmHWM: the most the process has held resident at once since it started. */
  peakRssMiB: number;
  fds: number;
  /** From the preload; undefined when it did not say (shown as n/a). */
  heapAfterGcMiB: number | undefined;
  /** Which major collection `heapAfterGcMiB` followed: samples of the same one count once. */
  majorGcs: number | undefined;
  heapTotalMiB: number | undefined;
}

export interface Sample {
  gateway: ProcessSample;
  service: ProcessSample;
  /** Connections the Redis server has from the gateway process; undefined when unreadable. */
  gatewayRedisClients: number | undefined;
  /** Every client of the Redis server, other users of a shared server included. */
  redisClients: number | undefined;
}

/** A `kB` field of /proc/<pid>/status (VmRSS, VmHWM) in MiB; NaN when absent. */
function statusMiB(status: string, field: string): number {
  const kib = new RegExp(`^${field}:\\s*(\\d+) kB$`, 'm').exec(status)?.[1];
  return Number(kib ?? Number.NaN) / 1024;
}

export function rssMiB(pid: number): number {
  return statusMiB(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS');
}

/**
 * Resident memory now and at its peak. A sample every few seconds misses the peak between two:
 * VmHWM is the kernel's own record of it.
 */
function residentMiB(pid: number): { rssMiB: number; peakRssMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rssMiB: statusMiB(status, 'VmRSS'), peakRssMiB: statusMiB(status, 'VmHWM') };
}

export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

function processSample(pid: number, memoryFile: string): ProcessSample {
  const sample: ProcessSample = {
    ...residentMiB(pid),
    fds: openFds(pid),
    heapAfterGcMiB: undefined,
    majorGcs: undefined,
    heapTotalMiB: undefined,
  };
  if (!existsSync(memoryFile)) return sample;
  try {
    const record = JSON.parse(readFileSync(memoryFile, 'utf8')) as MemoryRecord;
    if (Date.now() - record.at > STALE_RECORD_MS) return sample;
    sample.heapTotalMiB = record.heapTotal / MiB;
    if (record.heapAfterMajorGc !== undefined) {
      sample.heapAfterGcMiB = record.heapAfterMajorGc / MiB;
      sample.majorGcs = record.majorGcs;
    }
  } catch {
    // Unreadable: the figures stay n/a for this sample.
  }
  return sample;
}

/** Inodes of the sockets a process holds (`/proc/<pid>/fd/* -> socket:[inode]`). */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match?.[1] !== undefined) inodes.add(match[1]);
    } catch {
      // Closed between the listing and the readlink.
    }
  }
  return inodes;
}

/** Local TCP ports of the sockets `pid` holds to `remotePort`, from its namespace's tables. */
function localTcpPorts(pid: number, remotePort: number): Set<number> {
  const inodes = socketInodes(pid);
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    const path = `/proc/${pid}/net/${table}`;
    if (!existsSync(path)) continue;
    // `sl local_address rem_address st ... uid timeout inode`: local is HEXIP:HEXPORT.
    for (const line of readFileSync(path, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [local, remote, inode] = [fields[1], fields[2], fields[9]];
      if (local === undefined || remote === undefined || inode === undefined || !inodes.has(inode)) continue;
      const port = (address: string) => Number.parseInt(address.slice(address.lastIndexOf(':') + 1), 16);
      if (port(remote) === remotePort) ports.add(port(local));
    }
  }
  return ports;
}

/**
 * The gateway's connections as the Redis server sees them (CLIENT LIST entries whose address
 * is one of the gateway's sockets), and the server's total (INFO clients).
 */
async function redisClients(
  redis: Redis,
  gatewayPid: number,
): Promise<{ gateway: number | undefined; all: number | undefined }> {
  try {
    const info = await redis.info('clients');
    const all = Number(/^connected_clients:(\d+)/m.exec(info)?.[1] ?? Number.NaN);
    const ports = localTcpPorts(gatewayPid, Number(redis.options.port ?? 6379));
    const list = (await redis.call('CLIENT', 'LIST')) as string;
    const gateway = list
      .split('\n')
      .filter((line) => ports.has(Number(/ addr=\S+:(\d+) /.exec(` ${line} `)?.[1] ?? -1))).length;
    return { gateway, all };
  } catch {
    return { gateway: undefined, all: undefined };
  }
}

export async function takeSample(options: {
  gatewayPid: number;
  servicePid: number;
  memoryFiles: { gateway: string; service: string };
  redis: Redis;
}): Promise<Sample> {
  const redis = await redisClients(options.redis, options.gatewayPid);
  return {
    gateway: processSample(options.gatewayPid, options.memoryFiles.gateway),
    service: processSample(options.servicePid, options.memoryFiles.service),
    gatewayRedisClients: redis.gateway,
    redisClients: redis.all,
  };
}
