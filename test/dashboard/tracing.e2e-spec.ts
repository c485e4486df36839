import { randomBytes } from 'node:crypto';

import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

import type { Stack } from '../support/stack';
import { compactOnce, startWindowStack } from './support';
import { until } from '../support/wait';

// issue 6 item 4: spans for the request, the compaction decision, the summariser call and the archive write, with
// gen_ai.* attributes (OTel GenAI semantic conventions) and no message text. An in-memory exporter stands in for
// the operator's collector, as in libs/telemetry/src/tracing.spec.ts.

describe('OpenTelemetry spans of one compacted request', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager();
  const marker = `MARKER${randomBytes(8).toString('hex')}`;
  let stack: Stack;
  let spans: ReadableSpan[];
  const named = (name: string) => spans.find((s) => s.name === name);

  beforeAll(async () => {
    context.setGlobalContextManager(contextManager.enable());
    trace.setGlobalTracerProvider(provider);
    stack = await startWindowStack();
    expect(await compactOnce(stack, { tag: 'traced', marker })).toBe(200);
    // The request span ends when the answer has gone out; wait for it rather than for a fixed time.
    await until('the request span to end', () =>
      exporter.getFinishedSpans().some((s) => s.name === 'guardian.request'),
    );
    spans = exporter.getFinishedSpans();
  });
  afterAll(async () => {
    await stack.close();
    trace.disable();
    context.disable();
    await provider.shutdown();
  });

  it('records the request, the decision, the summariser call and the archive write', () => {
    expect(spans.map((s) => s.name)).toEqual(
      expect.arrayContaining([
        'guardian.request',
        'guardian.compaction.decide',
        'guardian.summarise',
        'guardian.archive.write',
      ]),
    );
  });

  it('nests the compaction spans inside the request span, in one trace', () => {
    const request = named('guardian.request')!;
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const ancestors = (s: ReadableSpan): string[] => {
      const parent = s.parentSpanContext?.spanId;
      const p = parent === undefined ? undefined : byId.get(parent);
      return p ? [p.name, ...ancestors(p)] : [];
    };
    for (const name of ['guardian.compaction.decide', 'guardian.summarise', 'guardian.archive.write']) {
      const span = named(name)!;
      expect([name, span.spanContext().traceId]).toEqual([name, request.spanContext().traceId]);
      expect([name, ancestors(span)]).toEqual([name, expect.arrayContaining(['guardian.request'])]);
    }
  });

  it('carries the model and token counts as gen_ai.* attributes', () => {
    for (const name of ['guardian.compaction.decide', 'guardian.summarise', 'guardian.archive.write']) {
      expect([name, named(name)?.attributes['gen_ai.request.model']]).toEqual([name, 'stub-model']);
    }
    const decide = named('guardian.compaction.decide')!.attributes;
    expect(decide['gen_ai.system']).toBe('openai');
    expect(decide['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
    expect(decide['guardian.outcome']).toBe('compacted');
    expect(decide['guardian.tokens_after']).toBeLessThan(decide['gen_ai.usage.input_tokens'] as number);
    const summarise = named('guardian.summarise')!.attributes;
    expect(summarise['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
    expect(summarise['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));
    const request = named('guardian.request')!.attributes;
    expect(request).toMatchObject({
      'http.request.method': 'POST',
      'guardian.route': 'chat',
      'http.response.status_code': 200,
    });
  });

  it('carries no message text in any attribute or span event', () => {
    expect(stack.stub.requests.some((r) => r.body.toString('utf8').includes(marker))).toBe(true);
    const leaks = spans.filter((s) =>
      JSON.stringify({ a: s.attributes, e: s.events, st: s.status }).includes(marker),
    );
    expect(leaks.map((s) => s.name)).toEqual([]);
  });
});
