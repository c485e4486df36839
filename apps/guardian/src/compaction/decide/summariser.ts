import { randomBytes } from 'node:crypto';

import { Injectable } from '@nestjs/common';

import {
  buildSummaryPrompt,
  groupForPrompts,
  maxSummaryTokens,
  summaryPromptLimit,
  type BudgetInfo,
  type Counter,
  type SummaryPrompt,
} from '@guardian/compaction';
import { CodedError } from '@guardian/errors';
import { genAiAttributes, withSpan } from '@guardian/telemetry';
import { UpstreamClient, type HeaderMap } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import { DecideReporter } from './decide-reporter';
import type { FormatAdapter } from '../../formats/format-adapter';
import { UsageLedger } from '../../observability/usage-ledger';
import { SummaryBreaker } from './summary-breaker';
import { refuseSummary, type ReplacedText, type SummaryRefusal } from './summary-check';

/** A summary could not be had: the compaction fails open. `code` names why. */
export type SummariseErrorCode =
  | 'SUMMARY_HTTP_ERROR'
  | 'SUMMARY_TIMEOUT'
  | 'SUMMARY_CIRCUIT_OPEN'
  | 'SUMMARY_TOO_SHORT'
  | 'SUMMARY_EMPTY'
  | 'SUMMARY_REFUSED'
  | 'TRANSCRIPT_TOO_SHORT';

export class SummariseError extends CodedError<SummariseErrorCode> {
  override readonly name = 'SummariseError';
}

export interface SummaryResult {
  summary: string;
  calls: number;
  chunked: boolean;
  retries: number;
}

export interface SummariseInput {
  adapter: FormatAdapter;
  model: string;
  headers: HeaderMap;
  lines: string[];
  prior?: string;
  budget: BudgetInfo;
  counter: Counter;
  signal: AbortSignal;
  route: 'chat' | 'messages' | 'responses';
  /** Team mode: the owner of the conversation summarised, whose usage the summary's tokens count in. */
  ownerHash?: string;
  /** The client's summarisation instructions (a native compaction's `instructions`). */
  instructions?: string;
}

/**
 * Summarises an evicted stretch with the same upstream and model, the client's credentials forwarded (issue 3 §5).
 * A prompt that would not fit (summaryPromptLimit: the window less the summary) is done in consecutive groups (first group; then summary so far +
 * next group). A summary under GUARDIAN_MIN_SUMMARY_CHARS, or one refuseSummary refuses (summary-check.ts), is asked
 * for once more; any failure throws SummariseError.
 */
@Injectable()
export class Summariser {
  constructor(
    private readonly config: GuardianConfig,
    private readonly upstream: UpstreamClient,
    private readonly reporter: DecideReporter,
    private readonly breaker: SummaryBreaker,
    private readonly ledger: UsageLedger,
  ) {}

  /**
   * The summary, or SummariseError. Behind the model's circuit breaker: a model whose summaries keep failing is
   * not asked until the breaker's schedule says so (SUMMARY_CIRCUIT_OPEN), and each outcome moves the breaker.
   */
  async summarise(input: SummariseInput): Promise<SummaryResult> {
    if (!this.breaker.allows(input.model))
      throw new SummariseError(
        'SUMMARY_CIRCUIT_OPEN',
        'the summariser keeps failing for this model; not asked now',
      );
    try {
      const result = await this.summariseOnce(input);
      this.breaker.success(input.model);
      return result;
    } catch (err) {
      // A transcript too short to summarise, or a client that went away, says nothing about the model.
      if (err instanceof SummariseError && err.code !== 'TRANSCRIPT_TOO_SHORT' && !input.signal.aborted)
        this.breaker.failure(input.model);
      throw err;
    }
  }

  private async summariseOnce(input: SummariseInput): Promise<SummaryResult> {
    const { summariser } = this.config;
    const transcriptChars = input.lines.reduce((n, l) => n + l.length, 0);
    if (transcriptChars < summariser.minTranscriptChars) {
      throw new SummariseError(
        'TRANSCRIPT_TOO_SHORT',
        `transcript of ${transcriptChars} chars is under GUARDIAN_MIN_TRANSCRIPT_CHARS`,
      );
    }
    const maxTokens = maxSummaryTokens(input.budget);
    const groups = groupForPrompts(input.lines, {
      limitTokens: summaryPromptLimit(input.budget),
      summaryAllowanceTokens: maxTokens,
      counter: input.counter,
      hasPrior: input.prior !== undefined,
    });
    let summary = input.prior;
    let calls = 0;
    let retries = 0;
    for (const group of groups) {
      const prompt = buildSummaryPrompt(group, summary, {
        nonce: randomBytes(9).toString('base64url'),
        toolArgChars: summariser.toolArgChars,
        ...(input.instructions ? { instructions: input.instructions } : {}),
      });
      const replaced: ReplacedText = { lines: input.lines, callLines: group, prior: summary };
      let text = await this.call(input, prompt, maxTokens);
      calls += 1;
      let fault = this.fault(input, text, replaced);
      if (fault !== undefined) {
        // One more ask, for a summary too short or one that is not a summary (issue 32 item 7); then the caller's
        // checkpoint stands in (ADR 0007).
        retries += 1;
        this.reporter.summaryRetry();
        text = await this.call(input, prompt, maxTokens);
        calls += 1;
        fault = this.fault(input, text, replaced);
        if (fault === 'short') {
          throw new SummariseError(
            'SUMMARY_TOO_SHORT',
            `summary of ${text.length} chars twice under GUARDIAN_MIN_SUMMARY_CHARS`,
          );
        }
        if (fault !== undefined)
          throw new SummariseError('SUMMARY_REFUSED', `summary refused twice (${fault})`);
      }
      summary = text;
    }
    if (summary === undefined) throw new SummariseError('SUMMARY_EMPTY', 'nothing to summarise');
    return { summary, calls, chunked: groups.length > 1, retries };
  }

  /** Why `text` cannot be used: too short, or refused by refuseSummary (counted and evented), else undefined. */
  private fault(
    input: SummariseInput,
    text: string,
    replaced: ReplacedText,
  ): 'short' | SummaryRefusal | undefined {
    if (text.length < this.config.summariser.minSummaryChars) return 'short';
    const refusal = refuseSummary(text, replaced);
    if (refusal !== undefined) this.reporter.summaryRefused(input, refusal);
    return refusal;
  }

  private async call(input: SummariseInput, prompt: SummaryPrompt, maxTokens: number): Promise<string> {
    const { path, body } = input.adapter.summariserCall(input.model, prompt, {
      maxTokens,
      reasoningEffort: this.config.summariser.reasoningEffort,
    });
    const started = performance.now();
    return withSpan(
      'guardian.summarise',
      {
        ...genAiAttributes({ operation: 'chat', model: input.model, system: genAiSystem(input.route) }),
        'gen_ai.request.max_tokens': maxTokens,
      },
      async (span) => {
        // Each call has its own deadline, well under the upstream timeout: a hung summariser holds the client for
        // GUARDIAN_SUMMARY_TIMEOUT_MS, then the request fails open (issue 11).
        const timeoutMs = this.config.summariser.timeoutMs;
        const deadline = AbortSignal.timeout(timeoutMs);
        try {
          const res = await this.upstream.json({
            method: 'POST',
            path: `${this.config.upstream.basePath}${path}`,
            headers: { ...input.headers, 'content-type': 'application/json', accept: 'application/json' },
            body: Buffer.from(JSON.stringify(body)),
            signal: AbortSignal.any([input.signal, deadline]),
          });
          if (res.status !== 200) {
            throw new SummariseError('SUMMARY_HTTP_ERROR', `summariser answered HTTP ${res.status}`);
          }
          const text = input.adapter.summaryText(res.body)?.trim() ?? '';
          const usage = usageOf(res.body);
          span.setAttributes(genAiAttributes(usage));
          this.ledger.later({
            kind: 'summary',
            owner_hash: input.ownerHash ?? null,
            route: input.route,
            model: input.model,
            tokens_in: usage.inputTokens ?? null,
            tokens_out: usage.outputTokens ?? null,
          });
          this.reporter.summariserCall(
            text.length < this.config.summariser.minSummaryChars ? 'short' : 'ok',
            (performance.now() - started) / 1000,
          );
          return text;
        } catch (err) {
          this.reporter.summariserCall('error', (performance.now() - started) / 1000);
          if (err instanceof SummariseError) throw err;
          if (deadline.aborted && !input.signal.aborted)
            throw new SummariseError('SUMMARY_TIMEOUT', `summariser gave no answer within ${timeoutMs} ms`, {
              cause: err,
            });
          throw new SummariseError('SUMMARY_HTTP_ERROR', 'summariser call failed', { cause: err });
        }
      },
    );
  }
}

/** `gen_ai.system` from the route's wire format (OTel GenAI conventions name the API family, not the route). */
export function genAiSystem(route: string): string {
  return route === 'messages' ? 'anthropic' : 'openai';
}

/** Token counts the upstream reported for a summariser call: OpenAI chat, Anthropic and Responses shapes. */
function usageOf(body: unknown): { inputTokens?: number; outputTokens?: number } {
  const usage = typeof body === 'object' && body !== null ? (body as { usage?: unknown }).usage : undefined;
  if (typeof usage !== 'object' || usage === null) return {};
  const u = usage as Record<string, unknown>;
  const n = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  return {
    inputTokens: n(u.prompt_tokens) ?? n(u.input_tokens),
    outputTokens: n(u.completion_tokens) ?? n(u.output_tokens),
  };
}
