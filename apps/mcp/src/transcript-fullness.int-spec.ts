import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ledgerDir } from './cc-ledger';
import { contextStatus } from './transcript-fullness';

const line = (value: unknown): string => `${JSON.stringify(value)}\n`;
const user = (content: string): string => line({ type: 'user', message: { role: 'user', content } });

describe('contextStatus (get_context_status)', () => {
  let home: string;
  let opts: { ledgerDir: string; projectsDir: string; charsPerToken: number };

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'cg-cc-status-'));
    opts = { ledgerDir: ledgerDir(home), projectsDir: join(home, 'projects'), charsPerToken: 1 };
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  function ledger(name: string, body: Record<string, unknown>): void {
    mkdirSync(opts.ledgerDir, { recursive: true });
    writeFileSync(join(opts.ledgerDir, `${name}.json`), JSON.stringify(body));
  }

  it("counts from the later of the hook's last PreCompact offset and the last compact_boundary line", async () => {
    const transcript = join(home, 't.jsonl');
    const head = user('a'.repeat(1000));
    const boundary = line({ type: 'system', subtype: 'compact_boundary' });
    const middle = user('b'.repeat(300));
    const tail = user('c'.repeat(100));
    writeFileSync(transcript, head + boundary + middle + tail);
    const byBoundary = await contextStatus({ ...opts, transcriptPath: transcript });
    expect(byBoundary).toMatchObject({
      boundary: 'compact_boundary',
      bytes_counted: middle.length + tail.length,
    });

    // The hook recorded a later PreCompact (and an earlier one, and one past the end of a replaced file).
    const precompact = head.length + boundary.length + middle.length;
    ledger('a'.repeat(64), {
      transcript_path: transcript,
      last_capture_at: '2026-11-01T12:00:00Z',
      precompact: [{ offset: 10 }, { offset: precompact }, { offset: 10_000_000 }],
    });
    const byHook = await contextStatus({ ...opts, transcriptPath: transcript });
    expect(byHook).toMatchObject({ boundary: 'precompact', bytes_counted: tail.length, compacted: true });
  });

  it('takes the transcript the hook captured most recently when no path is given', async () => {
    const older = join(home, 'older.jsonl');
    const newer = join(home, 'newer.jsonl');
    writeFileSync(older, user('old'));
    writeFileSync(newer, user('x'.repeat(150_000)));
    ledger('1'.repeat(64), {
      transcript_path: older,
      last_capture_at: '2026-11-01T10:00:00Z',
      precompact: [],
    });
    ledger('2'.repeat(64), {
      transcript_path: newer,
      last_capture_at: '2026-11-01T11:00:00Z',
      precompact: [],
    });
    writeFileSync(join(opts.ledgerDir, 'torn.json'), '{"transcript_path":');
    const status = await contextStatus(opts);
    expect(status).toMatchObject({
      transcript: 'newer.jsonl',
      state: 'high',
      window: 200000,
      window_source: 'default',
    });
    expect(status.pct).toBeGreaterThanOrEqual(70);
    expect(status.pct).toBeLessThan(90);
  });

  it('falls back to the newest transcript under the projects folder, and uses the model table', async () => {
    const project = join(opts.projectsDir, '-work-app');
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'old.jsonl'), user('old'));
    utimesSync(join(project, 'old.jsonl'), new Date('2026-01-01'), new Date('2026-01-01'));
    writeFileSync(
      join(project, 'new.jsonl'),
      user('hi') + line({ type: 'assistant', message: { model: 'claude-opus-4-1', content: [] } }),
    );
    expect(await contextStatus(opts)).toMatchObject({
      state: 'ok',
      transcript: 'new.jsonl',
      model: 'claude-opus-4-1',
      window_source: 'model',
      boundary: 'none',
      compacted: false,
    });
  });

  it('is unknown, with a reason, when there is nothing to read', async () => {
    expect(await contextStatus(opts)).toMatchObject({
      state: 'unknown',
      reason: 'no Claude Code transcript found; pass transcript_path',
    });
    expect(await contextStatus({ ...opts, transcriptPath: join(home, 'gone.jsonl') })).toMatchObject({
      state: 'unknown',
      transcript: 'gone.jsonl',
      reason: 'transcript not readable (ENOENT)',
    });
  });
});
