import { PassThrough } from 'node:stream';

import type { UpstreamResponse } from '@guardian/upstream';

import type { CompactionService } from '../compaction/compaction.service';
import type { ForwardForecast } from '../compaction/decide/forward-forecast';
import type { PrepareInput, RequestContext } from '../compaction/handoff';
import type { RequestCounter } from '../compaction/request/request-counter';
import type { FailOpen } from '../observability/fail-open';
import { countRoute, TokenCounts } from './count-tokens';
import type { ProxiedRequest } from './proxy-front';
import type { ProxyReporter } from './proxy-reporter';

/** What the client was answered: status, headers and body, as the fake response recorded them. */
interface Answered {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

function fakeResponse(): { res: ProxiedRequest['res']; answered: Answered } {
  const answered: Answered = { status: 0, headers: {}, body: '' };
  const res = {
    writeHead(status: number, headers: Record<string, unknown>) {
      answered.status = status;
      answered.headers = headers;
      return res;
    },
    end(body?: string) {
      answered.body = body ?? '';
      return res;
    },
  };
  return { res: res as unknown as ProxiedRequest['res'], answered };
}

const ctx = {
  input: { route: 'messages', reqId: 'r1' },
  conv: { model: 'stub-model' },
  count: { tokens: 9000, rawEstimate: 9000, source: 'estimate', counter: { charsPerToken: 4, factor: 1 } },
  budget: { budget: 5000, window: 6000, reserve: 1000, reserveClamped: false },
  window: { window: 6000, source: 'env' },
} as unknown as RequestContext;

describe('TokenCounts', () => {
  it('answers the count without X-Guardian-Would-Forward when the forecast fails, and counts the fail-open', async () => {
    const reports: unknown[][] = [];
    const counts = new TokenCounts(
      { measure: async () => ctx } as unknown as CompactionService,
      { tokenized: async () => undefined } as unknown as RequestCounter,
      {
        forecast: async () => {
          throw new Error('a planner bug');
        },
      } as unknown as ForwardForecast,
      { unowned: () => undefined } as unknown as ProxyReporter,
      { report: (...args: unknown[]) => reports.push(args) } as unknown as FailOpen,
    );
    const { res, answered } = fakeResponse();
    const notServed = { status: 404, headers: {}, body: new PassThrough() } as unknown as UpstreamResponse;
    (notServed.body as PassThrough).end();
    const route = countRoute('POST', '/v1/messages/count_tokens')!;
    await counts.serve({ res } as ProxiedRequest, route, {} as PrepareInput, async () => notServed);
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body)).toEqual({ input_tokens: 9000 });
    expect(answered.headers['x-guardian-count-source']).toBe('estimate');
    expect(answered.headers).not.toHaveProperty('x-guardian-would-forward');
    expect(reports).toEqual([
      [
        'internal',
        'count_forecast',
        expect.objectContaining({ route: 'messages', model: 'stub-model', reqId: 'r1' }),
      ],
    ]);
  });
});
