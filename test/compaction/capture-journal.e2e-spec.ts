import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

import { searchArchive, verifyArchive } from '@guardian/archive';

import { startStack } from '../support/stack';
import { until } from '../support/wait';

/** GUARDIAN_CAPTURE=journal records every message, not only evicted ones, and the archive still verifies. */
describe('capture journal', () => {
  const post = (baseURL: string, messages: unknown[]) =>
    fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-guardian-session': 'journal-dev' },
      body: JSON.stringify({ model: 'stub-model', messages }),
    });

  async function eventually<T>(probe: () => Promise<T | undefined>): Promise<T> {
    let value: T | undefined;
    await until('the journal to be written', async () => {
      value = await probe().catch((err: { code?: string }) => {
        if (err.code === 'ARCHIVE_NOT_FOUND') return undefined; // nothing written yet
        throw err;
      });
      return value !== undefined;
    });
    return value as T;
  }

  it('makes messages that were never compacted searchable, once each, in a sealed journal', async () => {
    const stack = await startStack({ env: { GUARDIAN_CAPTURE: 'journal' } });
    const spanDir = join(stack.dataDir, 'spans');
    try {
      const first = [{ role: 'user', content: 'The staging database is called JOURNAL-MARKER-ORCA.' }];
      expect((await post(stack.baseURL, first)).status).toBe(200);
      const second = [
        ...first,
        { role: 'assistant', content: 'Noted.' },
        { role: 'user', content: 'And the queue?' },
      ];
      expect((await post(stack.baseURL, second)).status).toBe(200);

      const hits = await eventually(async () => {
        const r = await searchArchive({ spanDir, term: 'JOURNAL-MARKER-ORCA', max: 10 });
        return r.hits.length > 0 ? r.hits : undefined;
      });
      // Sent twice (the client resends its history) but journaled once.
      expect(hits).toHaveLength(1);
      await eventually(async () => {
        const r = await searchArchive({ spanDir, term: 'And the queue', max: 10 });
        return r.hits.length > 0 ? r.hits : undefined;
      });
      // Stopping the sidecar seals the open segment: the whole archive verifies.
      await stack.stopGuardian();
      const verdict = await verifyArchive({ spanDir });
      expect(verdict.runs.length).toBeGreaterThan(0);
      expect(verdict.ok).toBe(true);
    } finally {
      await stack.close();
    }
  });

  it('records nothing when capture is off (the default)', async () => {
    const stack = await startStack();
    try {
      expect((await post(stack.baseURL, [{ role: 'user', content: 'NOT-JOURNALED-TERM here' }])).status).toBe(
        200,
      );
      // A journal append runs behind the answer: read once the sidecar has nothing left running behind it.
      await until('the writes behind the answer', async () => {
        const stats = (await (await fetch(`${stack.guardian.url}/guardian/stats`)).json()) as {
          behind: number;
        };
        return stats.behind === 0;
      });
      // The span folder exists from boot (issue 12: /readyz reports a vanished one), and so does the log key, made at
      // first start (issue 29); no run, no log entry, no checkpoint.
      const spanDir = join(stack.dataDir, 'spans');
      expect(await searchArchive({ spanDir, term: 'NOT-JOURNALED-TERM', max: 10 })).toEqual({
        hits: [],
        total: 0,
        complete: true,
      });
      expect(await readdir(spanDir)).toEqual(['.tlog']);
      expect(await readdir(join(spanDir, '.tlog'))).toEqual(['log.key']);
    } finally {
      await stack.close();
    }
  });
});
