import { context, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';

// Spans go through @opentelemetry/api only (issue 6 item 4): with no SDK registered every call below is a
// no-op, so the request path pays nothing unless the operator points OTEL_EXPORTER_OTLP_ENDPOINT at a
// collector of their own.

const TRACER_NAME = 'context-guardian';

/** Attribute values a span may carry. Counts, names and switches only: never message text. */
export type SpanAttributeValues = Record<string, string | number | boolean | undefined>;

/** The tracer every guardian span comes from. */
function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/**
 * Runs `fn` inside an active span named `name`. A thrown error is recorded on the span, the span's status
 * is set to ERROR, and the error is rethrown unchanged; the span always ends.
 */
export async function withSpan<T>(
  name: string,
  attrs: SpanAttributeValues | Attributes,
  fn: (span: Span) => Promise<T> | T,
): Promise<T> {
  const span = tracer().startSpan(name);
  // No SDK: a span that records nothing needs no attributes, no context and no status (ADR 0013).
  if (!span.isRecording()) return fn(span);
  span.setAttributes(defined(attrs));
  return context.with(trace.setSpan(context.active(), span), async () => {
    try {
      const result = await fn(span);
      span.setStatus({ code: SpanStatusCode.OK });
      return result;
    } catch (err: unknown) {
      // Recorded, then rethrown: the caller decides whether this failure opens or propagates.
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : 'error' });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `fn` with a new span named `name` active, and leaves the span open: `fn` ends it (a request's span ends when
 * its answer has streamed, after `fn` returned). With no SDK registered the span does not record: `fn` then runs as
 * it is, without a context switch, and `attrs` is never called (ADR 0013: the request path pays nothing for tracing).
 */
export function withOpenSpan<T>(name: string, attrs: () => Attributes, fn: (span: Span) => T): T {
  const span = tracer().startSpan(name);
  if (!span.isRecording()) return fn(span);
  span.setAttributes(attrs());
  return context.with(trace.setSpan(context.active(), span), fn, undefined, span);
}

/** The GenAI facts a span may carry (OTel semantic conventions for generative AI, `gen_ai.*`). */
export interface GenAiFacts {
  /** `gen_ai.operation.name`, e.g. `chat` for a forwarded request, `summarise` for a summariser call. */
  operation?: string;
  /** `gen_ai.system`: the upstream's API family, e.g. `openai` or `anthropic`. */
  system?: string;
  /** `gen_ai.request.model`. */
  model?: string;
  /** `gen_ai.usage.input_tokens`. */
  inputTokens?: number;
  /** `gen_ai.usage.output_tokens`. */
  outputTokens?: number;
}

/** Maps GenAI facts onto `gen_ai.*` attribute names, leaving out the ones not given. */
export function genAiAttributes(facts: GenAiFacts): Attributes {
  return defined({
    'gen_ai.operation.name': facts.operation,
    'gen_ai.system': facts.system,
    'gen_ai.request.model': facts.model,
    'gen_ai.usage.input_tokens': facts.inputTokens,
    'gen_ai.usage.output_tokens': facts.outputTokens,
  });
}

function defined(attrs: SpanAttributeValues | Attributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** What `startOtelSdk` reads; a subset of `process.env`. */
export interface OtelEnv {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
  OTEL_SERVICE_NAME?: string;
}

/** A started SDK; `shutdown` flushes pending spans. */
export interface OtelHandle {
  shutdown(): Promise<void>;
}

/**
 * Starts an OpenTelemetry trace pipeline (a Node tracer provider, batching into the OTLP/HTTP trace
 * exporter), but only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-specific endpoint) is set.
 * Otherwise it loads nothing and returns undefined: no exporter is active unless the operator configures
 * one (issue 6). `OTEL_RESOURCE_ATTRIBUTES` is honoured as the full Node SDK would.
 */
export async function startOtelSdk(env: OtelEnv): Promise<OtelHandle | undefined> {
  const url = tracesUrl(env);
  if (url === undefined) return undefined;
  // Loaded on demand so that a sidecar without a collector never pays for the SDK's module graph. Not
  // @opentelemetry/sdk-node: it pulls every gRPC/proto exporter and the Prometheus exporter, two thirds of
  // the image's node_modules, to export traces over HTTP only (issue 13, defect 5).
  const { NodeTracerProvider } = await import('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { detectResources, envDetector, resourceFromAttributes } = await import('@opentelemetry/resources');
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  const resource = resourceFromAttributes({
    // semantic conventions: service.name
    'service.name': nonEmpty(env.OTEL_SERVICE_NAME) ?? TRACER_NAME,
  }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))],
  });
  // Registers the provider globally with the AsyncLocalStorage context manager, so spans nest per request.
  provider.register();
  return { shutdown: () => provider.shutdown() };
}

// OTLP exporter spec: the generic endpoint gets `/v1/traces` appended; the signal-specific one is used as is.
function tracesUrl(env: OtelEnv): string | undefined {
  const specific = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (specific !== undefined) return specific;
  const base = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  return base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}
