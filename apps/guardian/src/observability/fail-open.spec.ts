import { failOpenMessage } from './fail-open';

describe('failOpenMessage', () => {
  it('says a deferred span leaves the request compacted, not unchanged (ARCHITECTURE.md#fail-open rule 3)', () => {
    for (const reason of ['no_space', 'read_only', 'permission', 'other']) {
      const msg = failOpenMessage('archive', reason);
      expect(msg).toContain('compacted');
      expect(msg).toContain('deferred');
      expect(msg).not.toContain('unchanged');
    }
  });

  it('says side writes after forwarding do not touch the request', () => {
    expect(failOpenMessage('memo', 'usage_write')).toBe(
      'a usage write failed after the request was forwarded; the request is not affected',
    );
    expect(failOpenMessage('archive', 'log_write')).toContain('not affected');
  });

  it('says a failed token-count forecast still answers the count, only without its header', () => {
    expect(failOpenMessage('internal', 'count_forecast')).toContain('without X-Guardian-Would-Forward');
  });

  it('keeps "unchanged" for the stages that really forward the client bytes', () => {
    for (const stage of [
      'parse',
      'count',
      'window',
      'plan',
      'memo',
      'summarise',
      'rebuild',
      'internal',
    ] as const)
      expect(failOpenMessage(stage, 'x')).toBe('compaction failed open: the request goes upstream unchanged');
  });
});
