import { Injectable } from '@nestjs/common';

import { responseHeadersForClient, type UpstreamResponse } from '@guardian/upstream';

import { CompactionService } from '../compaction/compaction.service';
import { ForwardForecast } from '../compaction/decide/forward-forecast';
import type { PrepareInput, RequestContext, RequestCount } from '../compaction/handoff';
import { RequestCounter } from '../compaction/request/request-counter';
import { pathOnly, type OwnedRoute } from '../formats/owned-route';
import { FailOpen } from '../observability/fail-open';
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
 * through the backend's `/tokenize` where it has one, the conversation rendered as chat; else the calibrated
 * estimate; `X-Guardian-Count-Source` says which). Either way the answer carries
 * `X-Guardian-Would-Forward`: how many input tokens guardian would send upstream for this conversation after
 * compaction, and by which measure (ForwardForecast: planned, nothing summarised), so a client can see that a count
 * over its window is not a refusal to come.
 */
@Injectable()
export class TokenCounts {
  constructor(
    private readonly compaction: CompactionService,
    private readonly counter: RequestCounter,
    private readonly forecasts: ForwardForecast,
    private readonly reporter: ProxyReporter,
    private readonly failOpen: FailOpen,
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
    if (sent.ok && !NOT_SERVED.has(sent.res.status)) {
      const would = ctx ? await this.wouldForward(ctx) : {};
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
    // Exact through the backend's own tokenizer where it has one (vLLM, llama.cpp); else the estimate stands.
    const count = (await this.counter.tokenized(ctx.conv, ctx.auth)) ?? ctx.count;
    const body = JSON.stringify(route.answer(count.tokens));
    p.res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'x-guardian-count-source': count.source,
      ...(await this.wouldForward(ctx, count)),
    });
    p.res.end(body);
  }

  /**
   * `input_tokens=<n>; compacts=<bool>; measure=<m>; budget=<b>; window=<w>`: names and counts only, like the events.
   * `input_tokens` is what guardian would forward after compaction (ForwardForecast); with `measure=summary_new` it
   * counts the summary not yet written at the longest the summariser may write, so it is an upper bound.
   */
  private async wouldForward(
    ctx: RequestContext,
    count: RequestCount = ctx.count,
  ): Promise<Record<string, string>> {
    try {
      const forecast = await this.forecasts.forecast(withCount(ctx, count));
      const compacts = forecast.measure !== 'none';
      const header =
        `input_tokens=${forecast.tokens}; compacts=${compacts}; measure=${forecast.measure}; ` +
        `budget=${ctx.budget.budget}; window=${ctx.window.window}`;
      return { 'x-guardian-would-forward': header };
    } catch (err) {
      // The memo store falls back on its own (Redis down reads the local memo), so this is a planner failure on a
      // strange request: the count itself is still answered, only without the forecast.
      const { route, reqId } = ctx.input;
      this.failOpen.report('internal', 'count_forecast', { route, model: ctx.conv.model, reqId, err });
      return {};
    }
  }
}

/**
 * The context with the count a token count answered with (the backend's /tokenize), its per-message factor scaled to
 * that total as RequestCounter.count scales an exact count, so the plan's sums agree with it.
 */
function withCount(ctx: RequestContext, count: RequestCount): RequestContext {
  if (count === ctx.count) return ctx;
  const factor = count.rawEstimate > 0 ? count.tokens / count.rawEstimate : count.counter.factor;
  return { ...ctx, count: { ...count, counter: { ...count.counter, factor } } };
}
