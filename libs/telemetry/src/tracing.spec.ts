import { SpanStatusCode, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { genAiAttributes, startOtelSdk, withSpan } from './tracing';

describe('tracing helpers without an SDK', () => {
  it('starts nothing when OTEL_EXPORTER_OTLP_ENDPOINT is unset or blank', async () => {
    expect(await startOtelSdk({})).toBeUndefined();
    expect(await startOtelSdk({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeUndefined();
    // Still the API's no-op: nothing was registered, so no span can be exported anywhere.
    expect(trace.getTracerProvider().getTracer('x').startSpan('s').isRecording()).toBe(false);
  });

  it('runs the function and returns its value through a no-op span', async () => {
    await expect(withSpan('guardian.request', { route: 'chat' }, () => 42)).resolves.toBe(42);
  });
});

describe('tracing helpers with an in-memory exporter', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
  });
  afterEach(() => exporter.reset());
  afterAll(async () => {
    trace.disable();
    await provider.shutdown();
  });

  it('records a span with gen_ai attributes, leaving out the ones not given', async () => {
    const attrs = {
      route: 'chat',
      ...genAiAttributes({ operation: 'chat', system: 'openai', model: 'demo', inputTokens: 1234 }),
    };
    await withSpan('guardian.compaction', attrs, async () => 'done');
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('guardian.compaction');
    expect(span?.status.code).toBe(SpanStatusCode.OK);
    expect(span?.attributes).toEqual({
      route: 'chat',
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'demo',
      'gen_ai.usage.input_tokens': 1234,
    });
  });

  it('records the exception, marks the span as an error and rethrows the same error', async () => {
    const boom = Object.assign(new Error('summariser timed out'), { code: 'UPSTREAM_TIMEOUT' });
    await expect(
      withSpan('guardian.summarise', {}, async () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    const [span] = exporter.getFinishedSpans();
    expect(span?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'summariser timed out' });
    expect(span?.events.map((e) => e.name)).toEqual(['exception']);
  });

  it('lets the function add attributes to its own span', async () => {
    await withSpan('guardian.archive_write', {}, (span) => {
      span.setAttributes(genAiAttributes({ outputTokens: 77 }));
    });
    expect(exporter.getFinishedSpans()[0]?.attributes).toEqual({ 'gen_ai.usage.output_tokens': 77 });
  });
});
