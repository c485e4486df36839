import type { RecordedRequest } from '@guardian/stub-backend';

import type { TapRecord } from './tap';

/** The routes issue 21 says must carry the header on every request (the three compacted ones, and token counts). */
const CHECKED = new Map<string, string>([
  ['/v1/chat/completions', 'chat'],
  ['/chat/completions', 'chat'],
  ['/v1/messages', 'messages'],
  ['/messages', 'messages'],
  ['/v1/responses', 'responses'],
  ['/responses', 'responses'],
  ['/v1/messages/count_tokens', 'count_tokens'],
  ['/messages/count_tokens', 'count_tokens'],
]);

export const routeOf = (rec: TapRecord): string | undefined =>
  rec.method === 'POST' ? CHECKED.get(new URL(rec.url, 'http://x').pathname.replace(/\/+$/, '')) : undefined;

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(', ') : v);

/** What the logging proxy saw of one client's requests, against the values the page's setting should send. */
export interface HeaderVerdict {
  /** `messages 17, count_tokens 13`: the checked requests by route. */
  checked: string;
  checkedCount: number;
  /** One line per problem: `x-guardian-session missing on 2 of 5 (messages)`, `... "alice\nX" on 3 of 5`. */
  problems: string[];
  /** Requests not checked, by method and path, with how many carried no session header: `HEAD / x3 (no header)`. */
  unchecked: string[];
  /** `X-Guardian-Warning` answers the sidecar gave, with counts. */
  warnings: string[];
}

export function judgeHeaders(records: readonly TapRecord[], expect: Record<string, string>): HeaderVerdict {
  const checked = records.filter((r) => routeOf(r) !== undefined);
  const byRoute = new Map<string, number>();
  for (const r of checked) byRoute.set(routeOf(r) ?? '', (byRoute.get(routeOf(r) ?? '') ?? 0) + 1);
  const problems: string[] = [];
  for (const [name, want] of Object.entries(expect)) {
    const missing = checked.filter((r) => r.headers[name] === undefined);
    if (missing.length > 0) problems.push(`${name} missing on ${missing.length} of ${checked.length}`);
    const wrong = new Map<string, number>();
    for (const r of checked) {
      const got = one(r.headers[name]);
      if (got !== undefined && got !== want) wrong.set(got, (wrong.get(got) ?? 0) + 1);
    }
    for (const [got, n] of wrong)
      problems.push(`${name} ${JSON.stringify(got)} on ${n} of ${checked.length}`);
  }
  if (checked.length === 0) problems.unshift('no chat/messages/responses/count_tokens request was sent');
  const unchecked = new Map<string, { n: number; bare: number }>();
  for (const r of records.filter((x) => routeOf(x) === undefined)) {
    const key = `${r.method} ${new URL(r.url, 'http://x').pathname}`;
    const u = unchecked.get(key) ?? { n: 0, bare: 0 };
    u.n += 1;
    if (r.headers['x-guardian-session'] === undefined) u.bare += 1;
    unchecked.set(key, u);
  }
  const warnings = new Map<string, number>();
  for (const r of records) if (r.warning) warnings.set(r.warning, (warnings.get(r.warning) ?? 0) + 1);
  return {
    checked: [...byRoute].map(([route, n]) => `${route} ${n}`).join(', ') || 'none',
    checkedCount: checked.length,
    problems,
    unchecked: [...unchecked].map(([k, u]) => `${k} x${u.n}${u.bare === u.n ? ' (no header)' : ''}`),
    warnings: [...warnings].map(([w, n]) => `${n} x "${w}"`),
  };
}

interface Body {
  tools?: unknown;
  max_tokens?: unknown;
  max_completion_tokens?: unknown;
  max_output_tokens?: unknown;
}

const parse = (rec: TapRecord): Body => {
  try {
    return JSON.parse(rec.body.toString('utf8')) as Body;
  } catch {
    // Not JSON: no tools, no limit; such a request is never the main one.
    return {};
  }
};

/**
 * The prompt tokens the stub counted for the developer's main request: the last generation request that offers
 * the client's full tool set (the most tools any of its requests offered) and asks for more than 16 output tokens.
 * Undefined when no such request reached the stub unchanged. This is what `/guardian/usage` must show (ADR 0010).
 */
export function mainRequestTokens(
  records: readonly TapRecord[],
  stub: readonly RecordedRequest[],
): { tokens: number; tools: number } | undefined {
  const generations = records
    .filter((r) => routeOf(r) !== undefined && routeOf(r) !== 'count_tokens' && r.status === 200)
    .map((r) => {
      const b = parse(r);
      const max = [b.max_tokens, b.max_completion_tokens, b.max_output_tokens].find(
        (v) => typeof v === 'number',
      );
      return { r, tools: Array.isArray(b.tools) ? b.tools.length : 0, max: max };
    });
  const most = Math.max(0, ...generations.map((g) => g.tools));
  const main = generations.filter((g) => g.tools === most && (g.max === undefined || g.max > 16)).at(-1);
  if (!main) return undefined;
  const upstream = stub.find((s) => !s.isSummary && s.body.equals(main.r.body));
  return upstream?.promptTokens === undefined ? undefined : { tokens: upstream.promptTokens, tools: most };
}
