import { createHash } from 'node:crypto';

/**
 * Builds Claude Code transcript lines the way Claude Code writes them (one JSON object per line: `user`,
 * `assistant`, `system` with subtype `compact_boundary`, `summary`), for tests. Deterministic: uuids and
 * timestamps come from a counter, so the same calls give the same bytes.
 */
export class TranscriptFixture {
  private readonly out: string[] = [];
  private n = 0;
  private parent: string | null = null;
  private readonly base: number;

  constructor(
    private readonly opts: { sessionId: string; cwd: string; model?: string; start?: Date; version?: string },
  ) {
    this.base = (opts.start ?? new Date('2026-10-30T14:00:00Z')).getTime();
  }

  private uuid(): string {
    const hex = createHash('sha256').update(`${this.opts.sessionId}:${this.n}`).digest('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  }

  private push(fields: Record<string, unknown>): this {
    this.n += 1;
    const uuid = this.uuid();
    const line = {
      parentUuid: this.parent,
      isSidechain: false,
      userType: 'external',
      cwd: this.opts.cwd,
      sessionId: this.opts.sessionId,
      version: this.opts.version ?? '2.0.31',
      gitBranch: 'main',
      ...fields,
      uuid,
      timestamp: new Date(this.base + this.n * 1000).toISOString(),
    };
    this.parent = uuid;
    this.out.push(JSON.stringify(line));
    return this;
  }

  /** A typed instruction; `reminder` adds the system-reminder block Claude Code attaches before it. */
  user(text: string, opts: { reminder?: string } = {}): this {
    const content =
      opts.reminder === undefined
        ? text
        : [
            { type: 'text', text: `<system-reminder>\n${opts.reminder}\n</system-reminder>` },
            { type: 'text', text },
          ];
    return this.push({ type: 'user', message: { role: 'user', content } });
  }

  /** A slash-command echo Claude Code records as a meta user line. */
  command(name: string): this {
    return this.push({
      type: 'user',
      isMeta: true,
      message: {
        role: 'user',
        content: `<command-name>${name}</command-name>\n<command-message>${name.slice(1)}</command-message>`,
      },
    });
  }

  assistant(text: string): this {
    return this.push({
      type: 'assistant',
      requestId: `req_${this.n}`,
      message: {
        id: `msg_${this.n}`,
        type: 'message',
        role: 'assistant',
        model: this.opts.model ?? 'claude-sonnet-4-5-20250929',
        content: [{ type: 'text', text }],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1200 + this.n, output_tokens: 80, cache_read_input_tokens: 30000 },
      },
    });
  }

  /** An assistant tool_use line and the user line carrying its tool_result. */
  tool(name: string, input: Record<string, unknown>, result: { text: string; isError?: boolean }): this {
    const id = `toolu_${String(this.n + 1).padStart(6, '0')}`;
    this.push({
      type: 'assistant',
      message: {
        id: `msg_${this.n}`,
        type: 'message',
        role: 'assistant',
        model: this.opts.model ?? 'claude-sonnet-4-5-20250929',
        content: [{ type: 'tool_use', id, name, input }],
        stop_reason: 'tool_use',
        usage: { input_tokens: 900, output_tokens: 40 },
      },
    });
    return this.push({
      type: 'user',
      message: {
        role: 'user',
        content: [
          { tool_use_id: id, type: 'tool_result', content: result.text, is_error: result.isError === true },
        ],
      },
      toolUseResult: { stdout: result.text, stderr: '', interrupted: false },
    });
  }

  /** What Claude Code writes when it compacts: a boundary line, then the summary as a user line. */
  compaction(summary: string, trigger: 'auto' | 'manual' = 'auto'): this {
    this.push({
      type: 'system',
      subtype: 'compact_boundary',
      content: 'Conversation compacted',
      isMeta: false,
      level: 'info',
      compactMetadata: { trigger, preTokens: 155_000 },
    });
    return this.push({
      type: 'user',
      isCompactSummary: true,
      isVisibleInTranscriptOnly: true,
      message: {
        role: 'user',
        content: `This session is being continued from a previous conversation that ran out of context. ${summary}`,
      },
    });
  }

  /** Lines added since the last call (each without its newline). */
  take(): string[] {
    return this.out.splice(0, this.out.length);
  }

  /** Lines added since the last call as file text, one newline after each. */
  takeText(): string {
    return this.take()
      .map((l) => `${l}\n`)
      .join('');
  }
}
