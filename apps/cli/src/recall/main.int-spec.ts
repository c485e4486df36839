import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  CompactionLog,
  SealedArchive,
  parseVerifierKey,
  sha256Hex,
  verifyTlogProof,
  writerLog,
} from '@guardian/archive';

import type { CliIo } from '../common/cli-io';
import { main } from './main';

const NOW = new Date('2026-11-01T12:00:00Z');

function captureIo(
  dataDir: string,
  env: Record<string, string> = {},
): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s), isTTY: false },
    env: { GUARDIAN_DATA_DIR: dataDir, GUARDIAN_VERIFIED_DIR: join(dataDir, 'verified'), ...env },
    home: '/nonexistent-home',
    now: () => NOW,
    out: () => out,
    err: () => err,
  };
}

describe('context-guardian-recall', () => {
  let dataDir: string;
  let run: string;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'recall-cli-'));
    const archive = new SealedArchive({
      spanDir: join(dataDir, 'spans'),
      keepSpans: 500,
      replica: 'cli1',
      now: () => NOW,
      log: writerLog({ name: 'cli1', originPrefix: 'test.example' }),
    });
    for (const content of ['The deploy uses port 8786.', 'We rolled back the schema migration.']) {
      run = (
        await archive.write({
          kind: 'compaction',
          sessionHash: sha256Hex('dev'),
          route: 'chat',
          model: 'demo',
          messages: [{ role: 'user', content }],
          firstIndex: 1,
          summary: 'Deploy facts.',
          at: NOW,
        })
      ).run;
    }
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('searches: prints hits and exits 0, prints "no hits" and exits 1, writes a counts-only receipt', async () => {
    const io = captureIo(dataDir);
    expect(await main(['schema migration'], io)).toBe(0);
    expect(io.out()).toBe(`${run}/0002.json msg 0 [user]: We rolled back the schema migration.\n`);
    expect(await main(['kubernetes'], io)).toBe(1);
    expect(io.out()).toContain('no hits\n');
    const receipts = readdirSync(join(dataDir, 'receipts'));
    const lines = readFileSync(join(dataDir, 'receipts', receipts[0]!), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      {
        ts: NOW.toISOString(),
        kind: 'recall_call',
        hits: 1,
        chars_returned: 'We rolled back the schema migration.'.length,
      },
      { ts: NOW.toISOString(), kind: 'recall_call', hits: 0, chars_returned: 0 },
    ]);
  });

  it('searches with --json', async () => {
    const io = captureIo(dataDir, { GUARDIAN_RECEIPTS: '0' });
    expect(await main(['port', '--json', '--run', run], io)).toBe(0);
    const parsed = JSON.parse(io.out());
    expect(parsed.total).toBe(1);
    expect(parsed.hits[0]).toMatchObject({ run, span: 1, message_index: 0, role: 'user' });
    // Issue 29: the hit carries its log entry and a tlog-proof bundle that verifies offline with the log's key.
    const vkey = parseVerifierKey(readFileSync(join(dataDir, 'spans', '.tlog', 'cli1', 'vkey'), 'utf8'));
    const span = readFileSync(join(dataDir, 'spans', run, '0001.json'));
    expect(parsed.hits[0].log_entry).toBe(`context-guardian span ${run} 1 sha256:${sha256Hex(span)}`);
    expect(verifyTlogProof(parsed.hits[0].log_proof, parsed.hits[0].log_entry, vkey)).toMatchObject({
      ok: true,
    });
  });

  it('--verify prints OK per run and exits 0; a tampered span prints its break and exits 1', async () => {
    const io = captureIo(dataDir);
    expect(await main(['--verify', '--all'], io)).toBe(0);
    expect(io.out()).toBe(
      `${run} OK\nlog cli1 OK (2 entries, first verify: key pinned)\n1 run(s), 1 log(s) checked: all OK\n`,
    );
    // A run from before the log (a writer without one): reported as such, not a break.
    const older = await new SealedArchive({
      spanDir: join(dataDir, 'spans'),
      keepSpans: 500,
      replica: 'old1',
    }).write({
      kind: 'compaction',
      sessionHash: sha256Hex('old'),
      route: 'chat',
      model: 'demo',
      messages: [{ role: 'user', content: 'from before the log' }],
      firstIndex: 1,
      summary: 'Older.',
      at: NOW,
    });
    const withOlder = captureIo(dataDir);
    expect(await main(['--verify'], withOlder)).toBe(0);
    expect(withOlder.out()).toBe(
      `${older.run} OK\n${run} OK\nlog cli1 OK (2 entries, consistent with the 2 verified before)\n` +
        '1 span(s) in 1 run(s) were written before the log existed: in no log, sealed by their chains only\n' +
        '2 run(s), 1 log(s) checked: all OK\n',
    );
    writeFileSync(join(dataDir, 'spans', run, '0001.json'), '{"messages":[]}\n');
    const after = captureIo(dataDir);
    expect(await main(['--verify', '--run', run], after)).toBe(1);
    expect(after.out()).toContain(`${run} BREAK content-changed at seq 1:`);
  });

  it('--verify names a pinned log deleted with its run log-missing, and exits 1', async () => {
    // A second writer on the volume, so the volume's key is still known once the first log is gone.
    await new SealedArchive({
      spanDir: join(dataDir, 'spans'),
      keepSpans: 500,
      replica: 'cli2',
      now: () => NOW,
      log: writerLog({ name: 'cli2', originPrefix: 'test.example' }),
    }).write({
      kind: 'compaction',
      sessionHash: sha256Hex('other'),
      route: 'chat',
      model: 'demo',
      messages: [{ role: 'user', content: 'another writer' }],
      firstIndex: 1,
      summary: 'Other.',
      at: NOW,
    });
    expect(await main(['--verify'], captureIo(dataDir))).toBe(0);
    rmSync(join(dataDir, 'spans', '.tlog', 'cli1'), { recursive: true });
    rmSync(join(dataDir, 'spans', run), { recursive: true });
    const io = captureIo(dataDir);
    expect(await main(['--verify'], io)).toBe(1);
    expect(io.out()).toMatch(
      /^log cli1 BREAK log-missing: verified at 2 entries on \S+, and no log on the volume has its origin any more$/m,
    );
  });

  it('--heads, --reindex, --seal-existing, --prune and --repair', async () => {
    const io = captureIo(dataDir, { GUARDIAN_RETENTION_DAYS: '30' });
    expect(await main(['--heads'], io)).toBe(0);
    expect(io.out()).toMatch(new RegExp(`^${run} seq 2 [0-9a-f]{64}\\n$`));
    expect(await main(['--reindex'], io)).toBe(0);
    expect(io.out()).toContain('reindexed 2 span(s) in 1 run(s)\n');
    expect(await main(['--seal-existing'], io)).toBe(0);
    expect(io.out()).toContain('nothing to seal');
    expect(await main(['--prune'], io)).toBe(0);
    expect(io.out()).toContain('0 run(s) older than 30 day(s) removed\n');
    writeFileSync(
      join(dataDir, 'spans', run, '0003.json'),
      '{"messages":[{"role":"user","content":"late"}]}',
    );
    expect(await main(['--repair', run], io)).toBe(0);
    expect(io.out()).toContain(`${run}: sealed 0003.json\n${run} OK\n`);
  });

  it('--savings prints the block, --json the keys, and a bad AGE exits 2', async () => {
    const log = new CompactionLog({ logDir: join(dataDir, 'log'), replica: 'cli1', now: () => NOW });
    await log.append({
      run,
      span: 1,
      session_hash: sha256Hex('dev'),
      owner_hash: null,
      route: 'chat',
      model: 'demo',
      window: 32768,
      tokens_before: 145332,
      tokens_after: 14819,
      count_source: 'estimate',
      evicted_messages: 30,
      summary_reused: false,
      summariser_calls: 1,
      chunked: false,
      oversized_spilled: 1,
      pins: 0,
      archive_deferred: false,
      dry_run: false,
    });
    const io = captureIo(dataDir);
    expect(await main(['--savings', '--since', '7d'], io)).toBe(0);
    expect(io.out()).toBe(
      [
        'Context Guardian savings (last 7d)',
        '  compactions   1',
        '  requests      145,332 -> 14,819 tokens (89.8% smaller)',
        '  kept out      130,513 tokens',
        '  oversized     1 pasted message(s) cut to head + tail',
        '  summaries     0 reused (no summariser call)',
        '  recall        0 call(s), 0 chars returned',
        '  answered      0 request(s): 0 tokens in, 0 out',
        '  summariser    0 tokens in, 0 out',
        '',
      ].join('\n'),
    );
    const json = captureIo(dataDir);
    expect(await main(['--savings', '--since', '24h', '--json'], json)).toBe(0);
    expect(Object.keys(JSON.parse(json.out()))).toEqual([
      'window',
      'compactions',
      'tokens_before',
      'tokens_after',
      'tokens_kept_out',
      'pct_smaller',
      'oversized_spills',
      'summaries_reused',
      'recall_calls',
      'chars_returned',
      'answers',
      'answers_without_usage',
      'tokens_in',
      'tokens_out',
      'summariser_tokens_in',
      'summariser_tokens_out',
    ]);
    const priced = captureIo(dataDir, { GUARDIAN_COST_PER_1M_INPUT_USD: '3' });
    expect(await main(['--savings', '--since', '7d'], priced)).toBe(0);
    expect(priced.out()).toContain('  cost          $0.39 of input kept out (at $3 per 1M tokens)');
    const pricedJson = captureIo(dataDir, { GUARDIAN_COST_PER_1M_INPUT_USD: '3' });
    expect(await main(['--savings', '--since', '7d', '--json'], pricedJson)).toBe(0);
    expect(JSON.parse(pricedJson.out())).toMatchObject({
      tokens_kept_out: 130513,
      cost_saved_usd: 0.3915,
      cost_usd: 0,
    });
    const spend = captureIo(dataDir, { GUARDIAN_COST_PER_1M_OUTPUT_USD: '10' });
    expect(await main(['--savings', '--since', '7d'], spend)).toBe(0);
    expect(spend.out()).toContain('  spend         $0.00 (at $0 in, $10 out per 1M tokens)');
    const bad = captureIo(dataDir);
    expect(await main(['--savings', '--since', '7y'], bad)).toBe(2);
    expect(bad.err()).toContain('ARCHIVE_BAD_AGE');
  });

  it('--receipts --share prints the five-line block', async () => {
    const io = captureIo(dataDir);
    expect(await main(['--receipts', '--since', '7d', '--share'], io)).toBe(0);
    const lines = io.out().trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[0]).toBe('Context Guardian receipts (last 7d)');
    expect(lines[2]).toMatch(/^- \d+ spans archived \(\d+\.\d MB\), sealed, all runs verify$/);
    expect(lines[4]).toBe('- local only: no telemetry, nothing left this machine');
  });

  it('exits 2 on usage errors, bad ids and a missing archive', async () => {
    for (const argv of [
      [],
      ['--verify', '--heads'],
      ['term', '--verify'],
      ['--repair', '../../etc'],
      ['x', '--run', 'a/b'],
    ]) {
      const io = captureIo(dataDir);
      expect(await main(argv, io)).toBe(2);
      expect(io.err()).not.toBe('');
    }
    const empty = captureIo(join(dataDir, 'nowhere'));
    expect(await main(['--verify'], empty)).toBe(2);
    expect(empty.err()).toContain('ARCHIVE_NOT_FOUND');
  });

  it('--log-key prints the verifier key of each writer log in Go note format, and exits 1 when there is none', async () => {
    const io = captureIo(dataDir);
    expect(await main(['--log-key'], io)).toBe(0);
    const vkey = readFileSync(join(dataDir, 'spans', '.tlog', 'cli1', 'vkey'), 'utf8').trim();
    expect(io.out()).toBe(`${vkey}\n`);
    expect(vkey).toMatch(/^test\.example\/cli1\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$/);
    expect(() => parseVerifierKey(vkey)).not.toThrow();
    const json = captureIo(dataDir);
    expect(await main(['--log-key', '--json'], json)).toBe(0);
    expect(JSON.parse(json.out())).toEqual({ logs: [{ log: 'cli1', vkey }] });
    rmSync(join(dataDir, 'spans', '.tlog'), { recursive: true, force: true });
    const none = captureIo(dataDir);
    expect(await main(['--log-key'], none)).toBe(1);
    expect(none.out()).toContain('no span log');
  });
});
