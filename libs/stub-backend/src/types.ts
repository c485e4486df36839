/** Which real backend the stub imitates: its window-discovery endpoints and its overflow body. */
export type StubFlavor = 'vllm' | 'llamacpp' | 'ollama' | 'lmstudio' | 'litellm' | 'anthropic' | 'none';

/**
 * How the stub answers a generation request that no `reply` script answers: `ok` names how many messages it received;
 * `recall` answers the last user message with the `FACT-...` token of the best-matching sentence elsewhere in the
 * request (recall-answer.ts), so retention benchmarks can score answers without a model.
 */
export type StubAnswerMode = 'ok' | 'recall';

/** The generation APIs the stub answers (and counts prompts for). */
export type GenerationRoute = 'chat' | 'messages' | 'responses';

/** Options for {@link startStub}. Every field is optional. */
export interface StubOptions {
  /** Hard context window in tokens, as counted by `countTokens`. Default 8192. */
  window?: number;
  /** Which backend to imitate. Default `'vllm'`. */
  flavor?: StubFlavor;
  /** Model id the discovery endpoints report and answers echo when a request names none. Default `'stub-model'`. */
  model?: string;
  /** Bind address. Default `127.0.0.1`. */
  host?: string;
  /** Bind port. Default 0 (any free port). */
  port?: number;
  /** Serve `POST /tokenize`. Default true for `vllm` and `llamacpp`, false otherwise. */
  tokenize?: boolean;
  /** Delay every `/tokenize` answer by this many milliseconds (to exercise a tokenize timeout). */
  tokenizeDelayMs?: number;
  /**
   * vLLM `/tokenize` accepts `tools` and renders them in the chat template. Default true; false answers 400 to a
   * request that carries them, as a tokenizer endpoint that predates the field does.
   */
  tokenizeTools?: boolean;
  /** Serve `POST /v1/messages/count_tokens`. Default true. */
  countTokensEndpoint?: boolean;
  /** What a request no `reply` script answers gets (see {@link StubAnswerMode}). Default `'ok'`. */
  answer?: StubAnswerMode;
  /** Scripted reply for non-summary generation requests; `undefined` falls back to the default reply. */
  reply?: (req: RecordedRequest) => StubReply | undefined;
  /** Milliseconds added before every answer. Default 0. */
  latencyMs?: number;
  /**
   * Milliseconds a streamed (SSE) answer takes: its first event goes out at once, the last this long after, the rest
   * spread evenly between them, as a model generating a long answer does. Default 0 (all events at once).
   */
  streamMs?: number;
  /** Milliseconds added before answering a summary request (recognised by its marker); 0 by default. */
  summaryDelayMs?: number;
  /** Answer every summary request with "Ok." (under GUARDIAN_MIN_SUMMARY_CHARS), as a model that cannot summarise. */
  shortSummaries?: boolean;
  /**
   * Answer every summary request with transcript-shaped lines that match no real turn (issue 32 item 7), as a small
   * model that fabricates does; see `fabricatedSummaryText`.
   */
  fabricatedSummaries?: boolean;
  /** With `fabricatedSummaries`: always this one of FABRICATED_SHAPES, instead of each in turn. */
  fabricatedShape?: number;
  /**
   * Answer every summary request with a summary in the asked-for shape that holds nothing of the conversation (no
   * value, `- (none)` under `## Must Keep`); see `blankSummaryText`. Default false: the stub's summary lists every
   * `FACT-` token it read.
   */
  blankSummaries?: boolean;
  /**
   * Answer a prompt over the window with 200 instead of the overflow refusal, reporting the window as its prompt
   * tokens: the front of the prompt cut silently, as Ollama does past `num_ctx`. Default false.
   */
  truncate?: boolean;
  /** Keep at most this many records, dropping the oldest (benchmarks send millions). Default 10000. */
  maxRecorded?: number;
}

/** A scripted assistant turn. */
export interface StubReply {
  text?: string;
  toolCalls?: { id: string; name: string; arguments: string }[];
}

/** One request as the stub received and answered it. */
export interface RecordedRequest {
  method: string;
  /** Path with its query string. */
  path: string;
  /** Headers exactly as Node parsed them (lower-case names). */
  headers: Record<string, string | string[] | undefined>;
  /** Raw body bytes. */
  body: Buffer;
  /** The parsed body, when it was valid JSON. */
  json?: unknown;
  route: 'chat' | 'messages' | 'responses' | 'tokenize' | 'count_tokens' | 'window' | 'other';
  /** True when the request's text contains `SUMMARY_MARKER`. */
  isSummary: boolean;
  /** The stub's own count of the prompt (generation, tokenize and count_tokens routes). */
  promptTokens?: number;
  /** The completion tokens the stub's answer reported in its usage (generation routes that answered). */
  completionTokens?: number;
  /** With `truncate`: the prompt was over the window and was answered as if cut to it. */
  truncated?: boolean;
  /** HTTP status the stub answered; 0 until the status line is written. */
  status: number;
  /** True when the client went away before the answer completed. */
  aborted: boolean;
  /** `performance.now()` when the request arrived, and when its status line went out (in this process's clock). */
  receivedAt: number;
  answeredAt?: number;
}

/** A running stub upstream. */
export interface StubBackend {
  /** Origin, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** `url + '/v1'`: what an OpenAI-compatible client takes as its base URL. */
  readonly baseUrl: string;
  readonly window: number;
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[];
  /** The stub's deterministic tokenizer (the server uses exactly this). */
  countTokens(text: string): number;
  /** How the server counts a whole request body for one generation route. */
  countPrompt(json: unknown, route: GenerationRoute): number;
  /** Barrier: the next streamed answer sends its first SSE event, then waits for `release()`. */
  holdNextStream(): { release(): void; firstEventSent: Promise<void> };
  /**
   * Barrier: summariser calls wait until `release()` (or reset/close); `arrived` resolves when the first one came.
   * For a test that needs a summary under way at a known moment, which a delay cannot promise on a busy machine.
   */
  holdSummaries(): { release(): void; arrived: Promise<void> };
  /**
   * Barrier: the next summary request is held until `release()` (a summariser as slow as the test wants, with no
   * clock); `received` resolves when it has arrived. Released by `reset()` and `close()` too.
   */
  holdNextSummary(): { release(): void; received: Promise<void> };
  /** The next generation request (chat, messages, responses) is answered with this status and JSON body. */
  failNext(status: number, body: unknown): void;
  /** The next generation request is rejected as too long with that flavor's real body, even when it fits. */
  overflowNext(shape?: StubFlavor): void;
  /** Clear recorded requests and every one-shot setting (failNext, overflowNext, held streams). */
  reset(): void;
  close(): Promise<void>;
}
