import { Injectable } from '@nestjs/common';

import { responseHeadersForClient, type UpstreamResponse } from '@guardian/upstream';

import { CompactionService } from '../compaction/compaction.service';
import type { PrepareInput, RequestContext } from '../compaction/handoff';
import { pathOnly, type OwnedRoute } from '../formats/owned-route';
import { sendError, type ProxiedRequest } from './proxy-front';
import { ProxyReporter } from './proxy-reporter';

/**
 * The token-count endpoints (issue 28 item 4): Anthropic's `POST /v1/messages/count_tokens` and its OpenAI
 * equivalent `POST /v1/responses/input_tokens` (the openai SDK's `responses.inputTokens.count`). Each reads the body
 * of the generation route it counts for, and answers in that API's shape.
 */
const COUNT_ROUTES: Record<string, { as: OwnedRoute; answer: (tokens: number) => unknown }> = {
  '/v1/messages/count_tokens': { as: 'messages', answer: (tokens) => ({ input_tokens: tokens }) },
  '/v1/responses/input_tokens': {
    as: 'responses',
    answer: (tokens) => ({ object: 'response.input_tokens', input_tokens: tokens }),
  },
};

export type CountRoute = (typeof COUNT_ROUTES)[string];

/** The count route a request is on, or undefined. */
export function countRoute(method: string, url: string): CountRoute | undefined {
  if (method !== 'POST') return undefined;
  // Without the /v1 prefix too, as ownedRoute reads the generation routes.
  const path = pathOnly(url).replace(/\/+$/, '');
  return COUNT_ROUTES[path.startsWith('/v1/') ? path : `/v1${path}`];
}

/**
 * An upstream without the endpoint: no such route (404), not this method (405), not implemented (501). Any other
 * answer, an error included, is the upstream's own and goes to the client as it came.
 */
const NOT_SERVED = new Set([404, 405, 501]);

/**
 * Answers a token count: passed through when the upstream serves the endpoint, else from guardian's own count (exact
 * where the request stage asked the backend, else the calibrated estimate). Either way the answer carries
 * `X-Guardian-Would-Forward`: how many input tokens guardian would send upstream for this conversation, at most the
 * budget once it compacts, so a client can see that a count over its window is not a refusal to come.
 */
@Injectable()
export class TokenCounts {
  constructor(
    private readonly compaction: CompactionService,
    private readonly reporter: ProxyReporter,
  ) {}

  async serve(
    p: ProxiedRequest,
    route: CountRoute,
    input: PrepareInput,
    send: () => Promise<UpstreamResponse>,
  ): Promise<void> {
    const [sent, ctx] = await Promise.all([
      send().then(
        (res) => ({ ok: true as const, res }),
        (err: unknown) => ({ ok: false as const, err }),
      ),
      this.compaction.measure(input),
    ]);
    const would: Record<string, string> = ctx ? { 'x-guardian-would-forward': wouldForward(ctx) } : {};
    if (sent.ok && !NOT_SERVED.has(sent.res.status)) {
      this.reporter.unowned('passthrough');
      p.res.writeHead(sent.res.status, { ...responseHeadersForClient(sent.res.headers), ...would });
      sent.res.body.pipe(p.res);
      return;
    }
    if (sent.ok) sent.res.body.resume(); // the upstream's 404 is read and dropped: guardian answers instead
    if (!ctx) {
      // Nothing guardian could count (not JSON, a shape it does not read): the client hears the upstream.
      this.reporter.unowned(sent.ok ? 'passthrough' : 'upstream_error');
      if (sent.ok) {
        p.res.writeHead(sent.res.status, responseHeadersForClient(sent.res.headers));
        p.res.end();
      } else sendError(p.req, p.res, sent.err);
      return;
    }
    this.reporter.unowned('passthrough');
    const body = JSON.stringify(route.answer(ctx.count.tokens));
    p.res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'x-guardian-count-source': ctx.count.source,
      ...would,
    });
    p.res.end(body);
  }
}

/** `input_tokens=<n>; compacts=<bool>; budget=<b>; window=<w>`: names and counts only, like the events. */
function wouldForward(ctx: RequestContext): string {
  const compacts = ctx.count.tokens > ctx.budget.budget;
  const tokens = compacts ? ctx.budget.budget : ctx.count.tokens;
  return `input_tokens=${tokens}; compacts=${compacts}; budget=${ctx.budget.budget}; window=${ctx.window.window}`;
}
