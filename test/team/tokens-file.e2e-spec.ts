import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { spawn } from 'node:child_process';

import { MAIN } from '../faults/support/sidecar-process';
import { startTeamStack, TOKENS, type TeamStack } from './support';
import { until } from '../support/wait';

// Issue 15 item 1: GUARDIAN_TOKENS_FILE is reloaded when it changes, without a restart (a Kubernetes Secret update,
// a rotation); a reload that cannot be used keeps the last good tokens, counted and logged; a file that cannot be
// used at boot stops the boot with a message that names the line, never a token.

const CAROL = 'tok-carol-3a9e71c05d2b';

describe('GUARDIAN_TOKENS_FILE while the sidecar runs', () => {
  let stack: TeamStack;
  beforeAll(async () => {
    stack = await startTeamStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  /** Replaces the file the way a Secret update does: a new file renamed over the old. */
  const replace = async (text: string) => {
    const next = `${stack.tokensFile}.next`;
    await writeFile(next, text);
    await rename(next, stack.tokensFile);
  };
  const status = async (token: string) => (await stack.get('/guardian/archive/runs', token)).status;
  const reloads = async (outcome: string) => {
    const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    return Number(
      new RegExp(`^guardian_tokens_reloads_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text)?.[1],
    );
  };

  it('rotates: a new token works and a withdrawn one stops, without a restart; a bad edit changes nothing', async () => {
    expect(await status(CAROL)).toBe(403);
    await replace(`${TOKENS.alice} alice\n${CAROL} carol\n`);
    await until('the new token to be accepted', async () => (await status(CAROL)) === 200);
    expect(await status(TOKENS.bob)).toBe(403);
    expect(await reloads('loaded')).toBeGreaterThanOrEqual(1);

    await replace(`${TOKENS.alice} alice\n${CAROL}\n`);
    // Counted once per change noticed (the boot's one extra look may notice the same change too).
    await until('the unusable reload to be counted', async () => (await reloads('invalid')) >= 1);
    expect([await status(CAROL), await status(TOKENS.alice), await status(TOKENS.bob)]).toEqual([
      200, 200, 403,
    ]);
    expect(stack.logs()).toContain('line 2: expected \\"<token> <owner>\\", found 1 field(s)');
    for (const token of [CAROL, TOKENS.alice, TOKENS.bob]) expect(stack.logs()).not.toContain(token);
  });
});

describe('a tokens file that cannot be used at boot', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cg-badtokens-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('stops the built sidecar with exit 1 and a message naming the line, not the token', async () => {
    const file = join(dir, 'tokens');
    await writeFile(file, `${TOKENS.alice} alice\n${TOKENS.bob} team/bob\n`);
    const child = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH ?? '',
        GUARDIAN_TOKENS_FILE: file,
        GUARDIAN_DATA_DIR: dir,
        GUARDIAN_UPSTREAM_URL: 'http://127.0.0.1:9/v1',
        GUARDIAN_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    // `close`, not `exit`: the last stderr bytes may arrive after the exit event.
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(1);
    expect(output).toContain(
      'context-guardian: GUARDIAN_TOKENS_FILE cannot be used: line 2: owner "team/bob" must match',
    );
    expect(output).not.toContain(TOKENS.bob);
    expect(output).not.toContain(TOKENS.alice);
  });
});
