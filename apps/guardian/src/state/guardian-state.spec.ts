import { GuardianState } from './guardian-state';

// `behind` is what a caller waits on before it reads what answers left behind (issue 30 item 9): it must count every
// write until it settles, a failed one included, and come back to 0.
describe('GuardianState.behind', () => {
  it('counts work behind answers until each settles, either way', async () => {
    const state = new GuardianState();
    expect(state.behind).toBe(0);
    let ok!: () => void;
    let fail!: (err: Error) => void;
    const written = new Promise<void>((resolve) => (ok = resolve));
    const refused = new Promise<void>((_resolve, reject) => (fail = reject));
    state.trackBehind(written);
    state.trackBehind(refused);
    expect(state.behind).toBe(2);
    ok();
    await written;
    expect(state.behind).toBe(1);
    fail(new Error('disk full'));
    await refused.catch(() => undefined);
    expect(state.behind).toBe(0);
  });
});
