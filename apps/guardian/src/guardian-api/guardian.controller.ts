import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

import { Controller, Get, Header, HttpCode, Query, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';

import { OWNER_PATTERN, ownerHash } from '@guardian/archive';
import type { EventsAnswer, StatsAnswer, UsageAnswer } from '@guardian/client';
import { computeBudget } from '@guardian/compaction';
import { MemoStore } from '@guardian/memo';
import { GuardianMetrics } from '@guardian/telemetry';

import { sessionHash } from '../compaction/request/session';
import { GuardianConfig } from '../config/guardian-config';
import { GuardianRuntime } from '../config/guardian-runtime';
import { GuardianError } from '../http/http-error';
import { GuardianState, type GuardianEvent } from '../state/guardian-state';
import type { Viewer } from '../access/access-policy';
import { AccessGuard, PageGuard, viewerOf } from './access.guard';
import { buildStats } from './stats';

/** The page is read once; `__CSP_NONCE__` is replaced per response so only its own inline script and style run. */
const PAGE = readFileSync(join(__dirname, '..', 'observability', 'health-page.html'), 'utf8');

/** Bytes a live-stream client may leave unread before guardian drops it (it reconnects and gets recent events). */
const MAX_UNREAD_BYTES = 1024 * 1024;

/**
 * Guardian's own JSON endpoints and dashboard (ARCHITECTURE.md#http-surface). Metadata only: no message text
 * anywhere.
 */
@Controller()
export class GuardianController {
  constructor(
    private readonly config: GuardianConfig,
    private readonly runtime: GuardianRuntime,
    private readonly state: GuardianState,
    private readonly memo: MemoStore,
    private readonly metrics: GuardianMetrics,
  ) {}

  @Get('metrics')
  async prometheus(@Res() reply: FastifyReply): Promise<void> {
    const body = await this.metrics.registry.metrics();
    await reply.header('content-type', this.metrics.registry.contentType).send(body);
  }

  // Browsers ask for it on every page; answered here so it never reaches the upstream.
  @Get('favicon.ico')
  @HttpCode(204)
  @Header('cache-control', 'max-age=86400')
  favicon(): void {
    return;
  }

  @Get('guardian/stats')
  @UseGuards(AccessGuard)
  @Header('cache-control', 'no-store')
  async stats(@Req() req: FastifyRequest): Promise<StatsAnswer> {
    const { compaction } = this.config;
    const viewer = viewerOf(req);
    // A developer's dashboard lists their own sessions; the counters are the process's (no message text in either).
    const owner = viewer.kind === 'owner' ? viewer : undefined;
    return buildStats({
      config: this.config,
      state: this.state,
      metrics: this.metrics,
      replica: this.runtime.replica,
      memoStore: this.memo.kind,
      owner: owner?.owner ?? null,
      sessions: await this.memo.recentUsage(20, owner?.ownerHash),
      budgetFor: (w) => computeBudget(w, compaction.threshold, compaction.reserveOutput).budget,
    });
  }

  @Get('guardian/usage')
  @UseGuards(AccessGuard)
  @Header('cache-control', 'no-store')
  async usage(
    @Req() req: FastifyRequest,
    @Query('session') query?: string | string[],
    @Query('owner') ownerQuery?: string | string[],
  ): Promise<UsageAnswer> {
    // `?session=a&session=b` arrives as an array: refused like any other bad id (it was a 500, issue 12 suite).
    if (Array.isArray(query)) throw new GuardianError('GUARDIAN_BAD_SESSION', 'give session once', 400);
    const session = query;
    if (session !== undefined && (session.length === 0 || Buffer.byteLength(session) > 256)) {
      throw new GuardianError('GUARDIAN_BAD_SESSION', 'session must be 1-256 bytes', 400);
    }
    const owner = usageOwner(viewerOf(req), ownerQuery);
    const record = await this.memo.getUsage(
      session === undefined ? undefined : sessionHash(session, owner),
      owner === undefined ? undefined : ownerHash(owner),
    );
    if (!record) {
      throw new GuardianError(
        'GUARDIAN_NO_SESSION',
        session === undefined ? 'no session seen yet' : 'unknown session',
        404,
      );
    }
    return {
      window: record.window,
      used_after_compaction: record.used_after_compaction,
      pct: record.pct,
      count_source: record.count_source,
      session_source: record.session_source ?? null,
      model: record.model,
      last_compaction_at: record.last_compaction_at,
    };
  }

  @Get('guardian/events')
  @UseGuards(AccessGuard)
  async events(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const accept = String(req.headers.accept ?? '');
    const viewer = viewerOf(req);
    // A developer sees the events of their own sessions (compactions, spills, recoveries), not the team's.
    const shown = (e: GuardianEvent): boolean => viewer.kind === 'all' || e.owner_hash === viewer.ownerHash;
    if (!accept.includes('text/event-stream')) {
      const answer: EventsAnswer = { events: this.state.events.filter(shown) };
      await reply.header('cache-control', 'no-store').send(answer);
      return;
    }
    // A live stream: the recent events first, then each new one as it happens.
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    // Sent at once: without a first byte the headers wait in Node's buffer, and a client sees nothing until the
    // first event or keep-alive (WHATWG HTML, event stream format: `retry` sets the reconnection delay).
    raw.write('retry: 3000\n\n');
    // A client that stops reading (a laptop asleep) must not make guardian buffer events for it without bound.
    const send = (e: GuardianEvent) => {
      if (!shown(e)) return;
      if (raw.writableLength > MAX_UNREAD_BYTES) raw.destroy();
      else raw.write(`event: ${e.kind}\ndata: ${JSON.stringify(e)}\n\n`);
    };
    for (const e of this.state.events) send(e);
    const keepAlive = setInterval(() => raw.write(': keep-alive\n\n'), 15_000);
    const unsubscribe = this.state.subscribe(send);
    raw.on('close', () => {
      clearInterval(keepAlive);
      unsubscribe();
    });
  }

  /** The page carries no data, so it loads without a token and then asks for one (ARCHITECTURE.md#access). */
  @Get('guardian/health')
  @UseGuards(PageGuard)
  async page(@Res() reply: FastifyReply): Promise<void> {
    const nonce = randomBytes(16).toString('base64');
    await reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header(
        'content-security-policy',
        `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      )
      .header('x-content-type-options', 'nosniff')
      .send(PAGE.replace(/__CSP_NONCE__/g, nonce));
  }
}

/**
 * Whose usage `/guardian/usage` looks up (docs/team.md): a developer's own, always; the admin's (or an open
 * sidecar's) `?owner=` names one, else the sessions sent without a token.
 */
function usageOwner(viewer: Viewer, query: string | string[] | undefined): string | undefined {
  if (Array.isArray(query)) throw new GuardianError('GUARDIAN_BAD_OWNER', 'give owner once', 400);
  if (viewer.kind === 'owner') {
    if (query !== undefined && query !== viewer.owner)
      throw new GuardianError(
        'GUARDIAN_BAD_OWNER',
        'a developer token reads its own usage: leave out owner',
        400,
      );
    return viewer.owner;
  }
  if (query !== undefined && !OWNER_PATTERN.test(query))
    throw new GuardianError('GUARDIAN_BAD_OWNER', 'owner is not a valid owner name', 400);
  return query;
}
