/**
 * What JSON.stringify leaves raw in a line meant for logs: C1 controls and DEL (which drive a
 * terminal: U+009B is CSI) and U+2028/2029 (which some readers take for line ends). Both the
 * request log and the audit log carry values a client chose, such as an HTTP/2 `:path`.
 */

const UNSAFE = /[\u007f-\u009f\u2028\u2029]/;

/** `json` with those characters as `\uXXXX` escapes: the same JSON value, safe to print. */
export function escapeControls(json: string): string {
  // Most lines hold none: a test is cheaper than a replace that finds nothing.
  if (!UNSAFE.test(json)) return json;
  return json.replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
