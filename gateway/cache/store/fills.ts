/**
 * Fills: requests on their way upstream whose answers may be stored. An invalidation of their
 * path while they are out poisons them, so that an answer fetched before a write is never
 * stored after it.
 */
/** A request on its way upstream whose response may be stored, unless invalidated meanwhile. */
export interface Fill {
  readonly path: string;
  readonly requestTime: number;
  poisoned: boolean;
  end(): void;
}

export class Fills {
  readonly #byPath = new Map<string, Set<OpenFill>>();

  /** A fill for `path`, sent at `requestTime`; the caller ends it once stored or not. */
  open(path: string, requestTime: number): Fill {
    const fill = new OpenFill(path, requestTime, this);
    let set = this.#byPath.get(path);
    if (set === undefined) this.#byPath.set(path, (set = new Set()));
    set.add(fill);
    return fill;
  }

  /** Marks every open fill whose path matches: what it brings back is not stored. */
  poison(match: (path: string) => boolean): void {
    for (const [path, set] of this.#byPath) if (match(path)) for (const fill of set) fill.poisoned = true;
  }

  close(fill: OpenFill): void {
    const set = this.#byPath.get(fill.path);
    set?.delete(fill);
    if (set?.size === 0) this.#byPath.delete(fill.path);
  }
}

class OpenFill implements Fill {
  readonly path: string;
  readonly requestTime: number;
  poisoned = false;
  readonly #fills: Fills;

  constructor(path: string, requestTime: number, fills: Fills) {
    this.path = path;
    this.requestTime = requestTime;
    this.#fills = fills;
  }

  end(): void {
    this.#fills.close(this);
  }
}
