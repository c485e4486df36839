import { computeBudget } from '@guardian/compaction';
import { UpstreamClient } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import { GuardianState } from '../../state/guardian-state';
import { WindowService } from './window.service';

describe('WindowService.largestBudget (the fast path rejects a body too big for any known window first)', () => {
  const setup = (env: Record<string, string> = {}) => {
    const config = GuardianConfig.fromEnv(
      { GUARDIAN_DATA_DIR: '/nonexistent', ...env },
      { version: 'test', home: '/nonexistent' },
    );
    // Never called: nothing here asks the upstream.
    const upstream = new UpstreamClient({
      origin: 'http://127.0.0.1:9',
      timeoutSeconds: 1,
      connectTimeoutSeconds: 1,
    });
    const state = new GuardianState();
    return { windows: new WindowService(config, upstream, state), state };
  };
  const budgetOf = (w: number) => computeBudget(w, 0.85, 4096);

  it('is the default window’s budget before any model is known, and the largest once some are', () => {
    const { windows, state } = setup();
    expect(windows.largestBudget(budgetOf).budget).toBe(budgetOf(32768).budget);
    state.rememberWindow('big', { window: 131072, source: 'env' });
    state.rememberWindow('small', { window: 8192, source: 'env' });
    expect(windows.largestBudget(budgetOf).budget).toBe(budgetOf(131072).budget);
  });

  it('is taken over budgets, not windows: a window just under the reserve has the larger budget', () => {
    const { windows, state } = setup({ GUARDIAN_NUM_CTX: '4100' });
    state.rememberWindow('under-reserve', { window: 4000, source: 'learned:overflow' });
    // 4,100: min(3,485, 4,100 - 4,096) = 4; 4,000: the reserve is clamped to half, min(3,400, 2,000) = 2,000.
    expect([budgetOf(4100).budget, budgetOf(4000).budget]).toEqual([4, 2000]);
    expect(windows.largestBudget(budgetOf).budget).toBe(2000);
  });

  it('follows a window learned smaller, and one forgotten', () => {
    const { windows, state } = setup();
    state.rememberWindow('m', { window: 200000, source: 'detected:vllm' });
    expect(windows.largestBudget(budgetOf).budget).toBe(budgetOf(200000).budget);
    state.rememberWindow('m', { window: 16384, source: 'learned:overflow' });
    expect(windows.largestBudget(budgetOf).budget).toBe(budgetOf(32768).budget);
  });
});
