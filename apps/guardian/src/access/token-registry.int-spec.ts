import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';

import { ownerHash } from '@guardian/archive';
import { GuardianMetrics, createLogger } from '@guardian/telemetry';

import { TokenRegistry } from './token-registry';

const ALICE = 'tok-alice-4c1e9a7f02d8';
const BOB = 'tok-bob-93b7e2d41c05aa';
const CAROL = 'tok-carol-5e8a1f3c7b90';
const ADMIN = 'admin-token-71f0c3e9';

async function metric(metrics: GuardianMetrics, name: string): Promise<string> {
  return (await metrics.registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith(name))
    .join('\n');
}

/** Polls until `check` holds: the registry notices a change on its next stat, whenever that comes. */
async function until(check: () => boolean | Promise<boolean>, registry: TokenRegistry): Promise<void> {
  // The 5-minute bound only ends a hang: the verdict must not depend on the machine's speed.
  for (const giveUp = Date.now() + 300_000; !(await check()) && Date.now() < giveUp;) {
    await new Promise((r) => setTimeout(r, 10));
    await registry.settled();
  }
  expect(await check()).toBe(true);
}

describe('TokenRegistry reading GUARDIAN_TOKENS_FILE from a real folder', () => {
  let dir: string;
  let file: string;
  let logs: string;
  let metrics: GuardianMetrics;
  let registry: TokenRegistry;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cg-tokens-'));
    file = join(dir, 'tokens');
    writeFileSync(file, `${ALICE} alice\n${BOB} bob\n`);
    logs = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logs += chunk.toString('utf8');
        done();
      },
    });
    metrics = new GuardianMetrics();
    registry = TokenRegistry.open({
      file,
      adminToken: ADMIN,
      logger: createLogger({ level: 'info', destination: sink }),
      metrics,
      pollMs: 10,
    });
  });
  afterEach(() => {
    registry.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('names the owner of each token, the admin, and refuses the rest', () => {
    expect(registry.identify([ALICE])).toEqual({
      kind: 'developer',
      owner: 'alice',
      ownerHash: ownerHash('alice'),
    });
    expect(registry.identify([ADMIN])).toMatchObject({ kind: 'admin', owner: 'admin' });
    expect(registry.identify(['not-a-token-at-all-123'])).toEqual({ kind: 'rejected' });
    expect(registry.identify([ALICE, BOB])).toEqual({ kind: 'rejected' });
    expect(registry.identify([ALICE, ` ${ALICE}`])).toMatchObject({ owner: 'alice' });
    expect(registry.identify(undefined)).toEqual({ kind: 'anonymous' });
  });

  it('takes a changed file without a restart, keeps the last good set through a bad edit, logs it once', async () => {
    // Rotation: carol joins, bob's token is withdrawn, written the way Kubernetes swaps a Secret (a rename).
    writeFileSync(join(dir, 'next'), `${ALICE} alice\n${CAROL} carol\n`);
    renameSync(join(dir, 'next'), file);
    await until(() => registry.identify([CAROL]).kind === 'developer', registry);
    expect(registry.identify([BOB])).toEqual({ kind: 'rejected' });
    expect(await metric(metrics, 'guardian_tokens_reloads_total{outcome="loaded"}')).toMatch(/ 1$/);
    expect(await metric(metrics, 'guardian_tokens_loaded')).toContain('guardian_tokens_loaded 2');

    // A bad edit (an editor's half-written file, a slash in an owner) changes nothing.
    const bad = `${ALICE} alice\n${BOB} team/bob\n`;
    writeFileSync(file, bad);
    await until(() => logs.includes('cannot be used'), registry);
    const invalid = async () =>
      Number((await metric(metrics, 'guardian_tokens_reloads_total{outcome="invalid"}')).split(' ').at(-1));
    const counted = await invalid();
    expect(counted).toBeGreaterThanOrEqual(1);
    // The same bad content saved again (its mtime moves): counted again, not logged again.
    writeFileSync(join(dir, 'again'), bad);
    renameSync(join(dir, 'again'), file);
    await until(async () => (await invalid()) > counted, registry);
    expect(logs.match(/cannot be used/g)).toHaveLength(1);
    expect(logs).toContain('line 2: owner \\"team/bob\\" must match');
    expect(registry.identify([CAROL])).toMatchObject({ owner: 'carol' });
    expect(registry.identify([BOB])).toEqual({ kind: 'rejected' });

    // Gone (a Secret unmounted): still the last good set; back again: read again.
    rmSync(file);
    await until(() => logs.includes('cannot be read'), registry);
    expect(registry.identify([ALICE])).toMatchObject({ owner: 'alice' });
    writeFileSync(file, `${BOB} bob\n`);
    await until(() => registry.identify([BOB]).kind === 'developer', registry);
    expect(registry.identify([ALICE])).toEqual({ kind: 'rejected' });

    const reloads = await metric(metrics, 'guardian_tokens_reloads_total');
    expect(reloads).toMatch(/outcome="invalid"\} [1-9]/);
    expect(reloads).toMatch(/outcome="unreadable"\} [1-9]/);
    for (const token of [ALICE, BOB, CAROL, ADMIN]) expect(logs).not.toContain(token);
  });
});
