import { Controller, Get, Header, Param, Query, Req, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';

import type {
  HistoryAnswer,
  SessionAnswer,
  SessionListEntry,
  SessionsAnswer,
  UsagePeriod,
  UsageSummaryAnswer,
} from '@guardian/client';
import { MemoStore, type UsageRecord } from '@guardian/memo';

import { GuardianConfig } from '../config/guardian-config';
import { GuardianError } from '../http/http-error';
import type { Viewer } from '../access/access-policy';
import { AccessGuard, viewerOf } from './access.guard';
import { minuteHistory, sessionCompactions, sessionFigures, usageFigures } from './console-figures';
import { ConsoleLog } from './console-log';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** What the sessions view looks back over, and how many it lists: a page, not an export. */
const SESSIONS_DAYS = 7;
const MAX_SESSIONS = 100;
const MAX_SESSION_COMPACTIONS = 200;

const HistoryQuery = z.object({
  minutes: z.coerce.number().int().min(1).max(1440).default(60),
});
const SESSION_ID = /^[0-9a-f]{64}$/;

/**
 * The console's endpoints (issue 31, ARCHITECTURE.md#http-surface): the compactions per minute, the sessions by the
 * name they were sent with, and usage per developer and model. Metadata only, scoped like `/guardian/stats`: a
 * developer sees their own, the admin everything.
 */
@Controller('guardian')
@UseGuards(AccessGuard)
export class ConsoleController {
  constructor(
    private readonly config: GuardianConfig,
    private readonly memo: MemoStore,
    private readonly log: ConsoleLog,
  ) {}

  @Get('history')
  @Header('cache-control', 'no-store')
  async history(@Req() req: FastifyRequest, @Query() query: unknown): Promise<HistoryAnswer> {
    const parsed = HistoryQuery.safeParse(query);
    if (!parsed.success)
      throw new GuardianError('GUARDIAN_BAD_REQUEST', 'minutes must be a whole number from 1 to 1440', 400);
    const { minutes } = parsed.data;
    const now = new Date();
    const from = new Date(now.getTime() - minutes * 60_000);
    const viewer = viewerOf(req);
    const [rows, counted] = await Promise.all([
      this.log.rows(viewer, from),
      this.memo.compactionHistory(
        from.getTime(),
        now.getTime(),
        viewer.kind === 'owner' ? viewer.ownerHash : undefined,
      ),
    ]);
    return { now: now.toISOString(), minutes, buckets: minuteHistory(rows, from, now, counted) };
  }

  @Get('sessions')
  @Header('cache-control', 'no-store')
  async sessions(@Req() req: FastifyRequest): Promise<SessionsAnswer> {
    const viewer = viewerOf(req);
    const owner = viewer.kind === 'owner' ? viewer : undefined;
    const since = new Date(Date.now() - SESSIONS_DAYS * DAY_MS);
    const [rows, records] = await Promise.all([
      this.log.rows(viewer, since),
      this.memo.recentUsage(MAX_SESSIONS, owner?.ownerHash),
    ]);
    const figures = sessionFigures(rows);
    const byId = new Map<string, UsageRecord>(records.map((r) => [r.session, r]));
    // Sessions the memo does not name (a restart without Redis) are named by their run.json (ADR 0025, amended).
    const unnamed = [...figures.entries()]
      .filter(([id]) => byId.get(id)?.name === undefined)
      .map(([id, f]) => ({ id, run: f.run, ownerHash: f.owner_hash }));
    const named = await this.log.sessionNames(unnamed);
    const ids = new Set([...byId.keys(), ...figures.keys()]);
    const list = [...ids].map((id): SessionListEntry => {
      const r = byId.get(id);
      const f = figures.get(id);
      return {
        id,
        name: r?.name ?? named.get(id) ?? null,
        model: r?.model ?? f?.model ?? null,
        turns: r?.turns ?? null,
        window: r?.window ?? null,
        used: r?.used_after_compaction ?? null,
        pct: r?.pct ?? null,
        compactions: f?.compactions ?? 0,
        tokens_before: f?.tokens_before ?? 0,
        tokens_after: f?.tokens_after ?? 0,
        summariser_calls: f?.summariser_calls ?? 0,
        pins: f?.pins ?? 0,
        last_compaction_at: f?.last_compaction_at ?? null,
        at: r?.at ?? f?.last_compaction_at ?? null,
      };
    });
    list.sort((a, b) => ((a.at ?? '') < (b.at ?? '') ? 1 : (a.at ?? '') > (b.at ?? '') ? -1 : 0));
    return { sessions_of: owner?.owner ?? null, sessions: list.slice(0, MAX_SESSIONS) };
  }

  @Get('sessions/:id')
  @Header('cache-control', 'no-store')
  async session(@Req() req: FastifyRequest, @Param('id') id: string): Promise<SessionAnswer> {
    if (!SESSION_ID.test(id))
      throw new GuardianError('GUARDIAN_BAD_SESSION', 'a session id is the 64-hex session hash', 400);
    const viewer = viewerOf(req);
    const rows = await this.log.rows(viewer, new Date(Date.now() - SESSIONS_DAYS * DAY_MS));
    const compactions = sessionCompactions(rows, id, MAX_SESSION_COMPACTIONS);
    const record = await this.memo.getUsage(id);
    // Another owner's session is answered like a missing one (ARCHITECTURE.md#access).
    const visible = record !== undefined && (viewer.kind === 'all' || record.owner === viewer.ownerHash);
    if (compactions.length === 0 && !visible)
      throw new GuardianError('GUARDIAN_NO_SESSION', 'unknown session', 404);
    let name = visible ? (record.name ?? null) : null;
    const f = sessionFigures(rows.filter((r) => r.session_hash === id)).get(id);
    if (name === null && f !== undefined)
      name = (await this.log.sessionNames([{ id, run: f.run, ownerHash: f.owner_hash }])).get(id) ?? null;
    return { id, name, compactions };
  }

  @Get('usage/summary')
  @Header('cache-control', 'no-store')
  async usageSummary(@Req() req: FastifyRequest): Promise<UsageSummaryAnswer> {
    const viewer = viewerOf(req);
    const now = Date.now();
    const week = new Date(now - 7 * DAY_MS);
    const [rows, usage] = await Promise.all([this.log.rows(viewer, week), this.log.usageRows(viewer, week)]);
    const prices = this.log.prices();
    return {
      price_per_1m_input_usd: prices.inputPer1M,
      price_per_1m_output_usd: prices.outputPer1M,
      periods: {
        '24h': this.period(viewer, usageFigures(rows, usage, new Date(now - DAY_MS), prices)),
        '7d': this.period(viewer, usageFigures(rows, usage, week, prices)),
      },
    };
  }

  private period(viewer: Viewer, figures: ReturnType<typeof usageFigures>): UsagePeriod {
    const names =
      viewer.kind === 'owner' ? new Map([[viewer.ownerHash, viewer.owner]]) : this.log.ownerNames();
    return {
      total: figures.total,
      developers: figures.owners
        .map((o) => ({
          owner: o.ownerHash === null ? null : (names.get(o.ownerHash) ?? null),
          owner_hash: o.ownerHash,
          totals: o.totals,
          models: o.models,
        }))
        .sort((a, b) => b.totals.tokens_before - a.totals.tokens_before),
    };
  }
}
