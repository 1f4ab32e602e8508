// Matching of a request's method and path against a route table (routes.ts): exact per path segment, `{name}`
// segments become params, a known path under another method is 405 with Allow. Front thread only; built once at
// start, then a table lookup per request (the last line matched and a bounded cache of lines skip the walk).

/** What the matcher needs of a route; routes.ts adds the rest. */
export interface MatchableRoute {
  method: string;
  pattern: string;
}

interface CompiledRoute<E extends MatchableRoute> {
  entry: E;
  segments: string[];
  paramAt: boolean[];
}

export type RouteMatch<E extends MatchableRoute> =
  | { kind: 'found'; entry: E; params: string[] }
  | { kind: 'method_not_allowed'; allow: string }
  | { kind: 'not_found' };

/** Matches remembered per method and path: a producer or consumer sends the same few paths over and over, and a
 *  match walks every route. The cache starts over when full (a miss costs one walk). */
const matchCacheEntriesMax = 4096;

export class RouteTable<E extends MatchableRoute> {
  private readonly routes: CompiledRoute<E>[] = [];
  /** method -> path -> match: no key string is built per request. */
  private readonly matchCache = new Map<string, Map<string, RouteMatch<E>>>();
  private matchCacheEntries = 0;
  /** The last request line matched: comparing a fresh path with it costs less than hashing it for the cache, and a
   *  fleet of one route's clients sends the same line again and again. */
  private lastMethod = '';
  private lastPath = '';
  private lastMatch: RouteMatch<E> = { kind: 'not_found' };

  constructor(entries: readonly E[]) {
    for (const entry of entries) {
      const segments = entry.pattern.split('/').slice(1);
      this.routes.push({ entry, segments, paramAt: segments.map((s) => s.startsWith('{')) });
    }
  }

  /** The match of a method and path; the same (immutable) object for the same request line while cached. */
  match(method: string, path: string): RouteMatch<E> {
    if (path === this.lastPath && method === this.lastMethod) return this.lastMatch;
    const match = this.matchCached(method, path);
    this.lastMethod = method;
    this.lastPath = path;
    this.lastMatch = match;
    return match;
  }

  private matchCached(method: string, path: string): RouteMatch<E> {
    let byPath = this.matchCache.get(method);
    const cached = byPath?.get(path);
    if (cached !== undefined) return cached;
    const match = this.matchUncached(method, path);
    if (this.matchCacheEntries >= matchCacheEntriesMax) {
      this.matchCache.clear();
      this.matchCacheEntries = 0;
      byPath = undefined;
    }
    if (byPath === undefined) this.matchCache.set(method, (byPath = new Map()));
    byPath.set(path, match);
    this.matchCacheEntries += 1;
    return match;
  }

  private matchUncached(method: string, path: string): RouteMatch<E> {
    const parts = path.split('/');
    // A path always starts with '/', so parts[0] is ''; a trailing slash is a different route (404).
    const segmentCount = parts.length - 1;
    let allowed: string[] | null = null;
    for (const route of this.routes) {
      if (route.segments.length !== segmentCount) continue;
      const params = matchSegments(route, parts);
      if (params === null) continue;
      if (route.entry.method === method) return { kind: 'found', entry: route.entry, params };
      (allowed ??= []).push(route.entry.method);
    }
    if (allowed !== null) return { kind: 'method_not_allowed', allow: allowed.join(', ') };
    return { kind: 'not_found' };
  }
}

function matchSegments<E extends MatchableRoute>(route: CompiledRoute<E>, parts: string[]): string[] | null {
  const params: string[] = [];
  for (let i = 0; i < route.segments.length; i++) {
    const part = parts[i + 1]!;
    if (route.paramAt[i]) {
      if (part === '') return null;
      const decoded = decodeSegment(part);
      if (decoded === null) return null;
      params.push(decoded);
    } else if (part !== route.segments[i]) {
      return null;
    }
  }
  return params;
}

function decodeSegment(part: string): string | null {
  if (!part.includes('%')) return part;
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}
