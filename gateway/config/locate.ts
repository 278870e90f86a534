/**
 * Where in the file a config problem sits: `routes[0].upstream: must be a URL` names a key
 * path, and the YAML document knows the line of that key (or of its nearest parent the file
 * writes, for a key that is missing). An operator reads `gateway.yaml:4: routes[0]...` the
 * way compilers print errors.
 */
import { yaml } from './yaml-module.ts';

/** The line (1-based) of each problem's path in `text`, or undefined where none is found. */
export function problemLines(text: string, problems: readonly string[]): (number | undefined)[] {
  const { LineCounter, isNode, parseDocument } = yaml();
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter });
  if (document.errors.length > 0) return problems.map(() => undefined);
  return problems.map((problem) => {
    const segments = pathSegments(problem);
    if (segments === undefined) return undefined;
    // The nearest ancestor the file writes: a missing key is reported on its parent's line.
    for (let length = segments.length; length > 0; length--) {
      const node: unknown = document.getIn(segments.slice(0, length), true);
      if (isNode(node) && node.range !== null && node.range !== undefined)
        return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  });
}

/** `routes[0].upstream: reason` → ['routes', 0, 'upstream']; undefined for `(root)`/`(file)`. */
function pathSegments(problem: string): (string | number)[] | undefined {
  const path = /^([A-Za-z_$][\w$-]*(?:\[\d+\]|\.[\w$-]+)*): /.exec(problem)?.[1];
  if (path === undefined) return undefined;
  return [...path.matchAll(/([A-Za-z_$][\w$-]*)|\[(\d+)\]/g)].map((match) =>
    match[2] === undefined ? (match[1] ?? '') : Number(match[2]),
  );
}
