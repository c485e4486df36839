import { z } from 'zod';

import { CodedError } from '@guardian/errors';
import type { RecordedRequest, StubAnswerMode, StubFlavor, StubOptions, StubReply } from './types';

/** Stable error codes the stub throws (house rule 4). */
export type StubErrorCode = 'STUB_INVALID_OPTIONS' | 'STUB_LISTEN_FAILED';

export class StubError extends CodedError<StubErrorCode> {
  override readonly name = 'StubError';
}

export const FLAVORS = ['vllm', 'llamacpp', 'ollama', 'lmstudio', 'litellm', 'anthropic', 'none'] as const;
export const ANSWER_MODES = ['ok', 'recall'] as const;

const optionsSchema = z.object({
  window: z.number().int().positive().default(8192),
  flavor: z.enum(FLAVORS).default('vllm'),
  model: z.string().min(1).default('stub-model'),
  host: z.string().min(1).default('127.0.0.1'),
  port: z.number().int().min(0).max(65535).default(0),
  tokenize: z.boolean().optional(),
  tokenizeDelayMs: z.number().int().min(0).default(0),
  tokenizeTools: z.boolean().default(true),
  countTokensEndpoint: z.boolean().default(true),
  latencyMs: z.number().int().min(0).default(0),
  streamMs: z.number().int().min(0).default(0),
  summaryDelayMs: z.number().int().min(0).default(0),
  shortSummaries: z.boolean().default(false),
  fabricatedSummaries: z.boolean().default(false),
  fabricatedShape: z.number().int().min(0).optional(),
  blankSummaries: z.boolean().default(false),
  maxRecorded: z.number().int().min(0).default(10_000),
  answer: z.enum(ANSWER_MODES).default('ok'),
  truncate: z.boolean().default(false),
});

/** Options with every default applied. */
export interface ResolvedOptions {
  window: number;
  flavor: StubFlavor;
  model: string;
  host: string;
  port: number;
  tokenize: boolean;
  tokenizeDelayMs: number;
  tokenizeTools: boolean;
  countTokensEndpoint: boolean;
  latencyMs: number;
  streamMs: number;
  summaryDelayMs: number;
  shortSummaries: boolean;
  fabricatedSummaries: boolean;
  fabricatedShape?: number;
  blankSummaries: boolean;
  maxRecorded: number;
  answer: StubAnswerMode;
  truncate: boolean;
  reply?: (req: RecordedRequest) => StubReply | undefined;
}

export function resolveOptions(options: StubOptions): ResolvedOptions {
  const { reply, ...rest } = options;
  const parsed = optionsSchema.safeParse(rest);
  if (!parsed.success) {
    throw new StubError('STUB_INVALID_OPTIONS', `invalid stub options: ${z.prettifyError(parsed.error)}`, {
      cause: parsed.error,
    });
  }
  const o = parsed.data;
  // vLLM and llama.cpp serve POST /tokenize; the others have no such endpoint (seed: "count_source tokenize").
  const tokenize = o.tokenize ?? (o.flavor === 'vllm' || o.flavor === 'llamacpp');
  return { ...o, tokenize, reply };
}
