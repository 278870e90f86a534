/**
 * The frames of V8's profiles (CPU and heap), named as measure/profile-summary.ts and
 * measure/heap-summary.ts print them: a bundled frame by the module and line it was bundled
 * from (through the source map beside the bundle), a project file from its checkout on, a
 * package's file from its package on, and the folder its cost is counted to.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { fileURLToPath } from 'node:url';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/** Each bundle's source map by the bundle's URL; undefined for a file without one. */
const sourceMaps = new Map<string, SourceMap | undefined>();

/** `frame` where its code was written, for a file with a source map; else as it is. */
export function bundledFrom(frame: CallFrame): CallFrame {
  if (!frame.url.startsWith('file://')) return frame;
  if (!sourceMaps.has(frame.url)) {
    const mapFile = `${fileURLToPath(frame.url)}.map`;
    sourceMaps.set(
      frame.url,
      existsSync(mapFile)
        ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')) as SourceMapPayload)
        : undefined,
    );
  }
  const entry = sourceMaps.get(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber);
  if (entry === undefined || !('originalSource' in entry)) return frame;
  return {
    functionName: frame.functionName,
    // The map's sources are relative to the map, which sits beside the bundle.
    url: new URL(entry.originalSource, frame.url).href,
    lineNumber: entry.originalLine,
    columnNumber: entry.originalColumn,
  };
}

/** A function as the tables name it: its name and where it is defined. */
export function describe(frame: CallFrame): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (frame.url === '') return name;
  return `${name}  ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
}

/** A project file relative to its checkout, a package's file from its package on. */
export function shortUrl(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  const inPackage = path.lastIndexOf('/node_modules/');
  if (inPackage !== -1) return path.slice(inPackage + '/node_modules/'.length);
  const own = /\/(?:dist\/)?((?:gateway|shared|resource-service|measure)\/.*)$/.exec(path);
  return own?.[1] ?? path;
}

/**
 * The folder a frame's self time is counted to: a project folder two levels deep
 * (`gateway/cache`), an npm package, a Node.js module, or a native function by its name
 * (`writev`, `(garbage collector)`, `(program)`).
 */
export function folderOf(frame: CallFrame): string {
  const { url } = frame;
  if (url === '') return `native ${frame.functionName}`;
  if (url.startsWith('node:')) {
    const parts = url.slice('node:'.length).split('/');
    return `node:${parts[0] === 'internal' && parts.length > 2 ? `internal/${parts[1]}` : parts.join('/')}`;
  }
  const path = url.replace(/^file:\/\//, '');
  const inPackage = path.lastIndexOf('/node_modules/');
  if (inPackage !== -1) {
    const parts = path.slice(inPackage + '/node_modules/'.length).split('/');
    return `npm ${parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  const own = shortUrl(url).split('/');
  return own.length > 2 ? `${own[0]}/${own[1]}` : own.join('/');
}
