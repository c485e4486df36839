import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  CompactionLog,
  LocalArchive,
  ownerHash,
  readDailyLogs,
  spendUsd,
  UsageLog,
  UsageLogLineSchema,
  type CompactionLogInput,
  type UsageLogInput,
} from '@guardian/archive';

import { ConsoleLogLine, minuteHistory, sessionFigures, usageFigures } from './console-figures';

// The console's figures come from the same compaction log lines `recall --savings` adds up (ADR 0025): over a real
// log folder, with dry runs, spills, two owners and lines outside the window, they must agree to the token. So must
// the usage log's figures (tokens in and out, summariser tokens) and the spend priced from them.

const NOW = new Date('2026-11-01T12:00:00Z');
const ALICE = ownerHash('alice');
const BOB = ownerHash('bob');

function line(over: Partial<CompactionLogInput>): CompactionLogInput {
  return {
    run: 'r1',
    span: 1,
    session_hash: 'a'.repeat(64),
    owner_hash: ALICE,
    route: 'chat',
    model: 'm1',
    window: 8192,
    tokens_before: 9000,
    tokens_after: 2500,
    count_source: 'estimate',
    evicted_messages: 10,
    summary_reused: false,
    summariser_calls: 1,
    chunked: false,
    oversized_spilled: 0,
    pins: 2,
    archive_deferred: false,
    dry_run: false,
    ...over,
  };
}

describe('console figures over a real compaction log', () => {
  let root: string;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'console-figures-'));
    const at = (ms: number) => new Date(NOW.getTime() - ms).toISOString();
    const log = new CompactionLog({ logDir: join(root, 'log'), replica: 'r0000001', now: () => NOW });
    await log.append(line({ ts: at(5 * 60_000) }));
    await log.append(
      line({ ts: at(5 * 60_000 + 1000), model: 'm2', tokens_before: 7001, tokens_after: 3333 }),
    );
    // A spill: tokens count, it is not a compaction.
    await log.append(
      line({ ts: at(20 * 60_000), evicted_messages: 0, summariser_calls: 0, tokens_after: 8000 }),
    );
    // A dry run saved nothing.
    await log.append(line({ ts: at(30 * 60_000), dry_run: true }));
    await log.append(line({ ts: at(3 * 3_600_000), owner_hash: BOB, session_hash: 'b'.repeat(64) }));
    await log.append(line({ ts: at(3 * 86_400_000), owner_hash: BOB, session_hash: 'b'.repeat(64) }));
    await log.append(line({ ts: at(3 * 60_000), owner_hash: null, session_hash: 'c'.repeat(64) }));

    let clock = NOW;
    const usage = new UsageLog({ usageDir: join(root, 'usage'), replica: 'r0000001', now: () => clock });
    const answer = (ago: number, over: Partial<UsageLogInput>) => {
      clock = new Date(NOW.getTime() - ago);
      const input: UsageLogInput = {
        kind: 'answer',
        owner_hash: ALICE,
        route: 'chat',
        model: 'm1',
        tokens_in: 2400,
        tokens_out: 31,
        ...over,
      };
      return usage.append(input);
    };
    await answer(4 * 60_000, {});
    await answer(4 * 60_000 - 10, { kind: 'summary', tokens_in: 5100, tokens_out: 377 });
    await answer(6 * 60_000, { model: 'm2', route: 'messages', tokens_in: 3001, tokens_out: 12 });
    // A chat stream without include_usage: answered, its tokens unknown.
    await answer(7 * 60_000, { tokens_in: null, tokens_out: null });
    await answer(2 * 3_600_000, { owner_hash: BOB, tokens_in: 1800, tokens_out: 64 });
    await answer(2 * 3_600_000 - 10, { owner_hash: BOB, kind: 'summary', tokens_in: 4000, tokens_out: 250 });
    await answer(4 * 86_400_000, { owner_hash: BOB, tokens_in: 999, tokens_out: 99 });
    await answer(60_000, { owner_hash: null, tokens_in: 100, tokens_out: 5 });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  async function rows(since: Date) {
    return (await readDailyLogs(join(root, 'log'), since, ConsoleLogLine)).rows;
  }

  it.each([
    ['24h', 86_400_000],
    ['7d', 7 * 86_400_000],
  ])('%s: each owner, and everyone, equal recall --savings to the token', async (since, ms) => {
    const from = new Date(NOW.getTime() - ms);
    const usage = (await readDailyLogs(join(root, 'usage'), from, UsageLogLineSchema)).rows;
    const prices = { inputPer1M: 2, outputPer1M: 8 };
    const figures = usageFigures(await rows(from), usage, from, prices);
    const savings = (ownerHashOf?: string) =>
      new LocalArchive({
        spanDir: join(root, 'spans'),
        anchorDir: null,
        logDir: join(root, 'log'),
        usageDir: join(root, 'usage'),
        receiptsDir: null,
        now: () => NOW,
        scope: ownerHashOf === undefined ? undefined : { ownerHash: ownerHashOf },
      }).savings({ since });
    const all = await savings();
    expect([figures.total.compactions, figures.total.tokens_before, figures.total.tokens_after]).toEqual([
      all.compactions,
      all.tokens_before,
      all.tokens_after,
    ]);
    expect(figures.total.tokens_kept_out).toBe(all.tokens_kept_out);
    const usageOf = (f: Partial<typeof all> | undefined) => [
      f?.answers ?? 0,
      f?.answers_without_usage ?? 0,
      f?.tokens_in ?? 0,
      f?.tokens_out ?? 0,
      f?.summariser_tokens_in ?? 0,
      f?.summariser_tokens_out ?? 0,
    ];
    expect(usageOf(figures.total)).toEqual(usageOf(all));
    expect(figures.total.cost_usd).toBe(spendUsd(all, prices));
    // The lines were written: the figures are not all zero.
    expect(all.tokens_out).toBeGreaterThan(0);
    expect(all.summariser_tokens_in).toBeGreaterThan(0);
    expect(all.answers_without_usage).toBe(1);
    for (const owner of [ALICE, BOB]) {
      const mine = figures.owners.find((o) => o.ownerHash === owner);
      const theirs = await savings(owner);
      expect([mine?.totals.compactions ?? 0, mine?.totals.tokens_kept_out ?? 0]).toEqual([
        theirs.compactions,
        theirs.tokens_kept_out,
      ]);
      expect(usageOf(mine?.totals)).toEqual(usageOf(theirs));
      expect(mine?.totals.cost_usd).toBe(spendUsd(theirs, prices));
      const outSum = (mine?.models ?? []).reduce((n, m) => n + m.tokens_out + m.summariser_tokens_out, 0);
      expect(outSum).toBe((mine?.totals.tokens_out ?? 0) + (mine?.totals.summariser_tokens_out ?? 0));
      // The models add up to the owner.
      const sum = (mine?.models ?? []).reduce((n, m) => n + m.tokens_before, 0);
      expect(sum).toBe(mine?.totals.tokens_before ?? 0);
    }
    expect(figures.total.cost_kept_out_usd).toBeCloseTo((all.tokens_kept_out / 1e6) * 2, 4);
  });

  it('puts each compaction in its UTC minute, and leaves out spills, dry runs and older lines', async () => {
    const from = new Date(NOW.getTime() - 60 * 60_000);
    const buckets = minuteHistory(await rows(from), from, NOW);
    expect(buckets).toEqual([
      { at: '2026-11-01T11:54:00.000Z', compactions: 1 },
      { at: '2026-11-01T11:55:00.000Z', compactions: 1 },
      { at: '2026-11-01T11:57:00.000Z', compactions: 1 },
    ]);
  });

  it('sums each session, and keeps the pins of its last compaction', async () => {
    const from = new Date(NOW.getTime() - 7 * 86_400_000);
    const alice = sessionFigures(await rows(from)).get('a'.repeat(64));
    expect(alice).toEqual({
      compactions: 2,
      tokens_before: 9000 + 7001 + 9000,
      tokens_after: 2500 + 3333 + 8000,
      summariser_calls: 2,
      pins: 2,
      last_compaction_at: '2026-11-01T11:55:00.000Z',
      // Of the newest line, though an older one (model m2) was appended after it: its run's run.json has the name.
      owner_hash: ALICE,
      model: 'm1',
      run: 'r1',
      latest_at: '2026-11-01T11:55:00.000Z',
    });
  });
});
