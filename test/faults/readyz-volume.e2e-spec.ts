import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

import { startStack, type Stack } from '../support/stack';
import { mountTmpfs, type Tmpfs } from './support/tmpfs';

// /readyz reports the span volume and never gates on it (ARCHITECTURE.md#fail-open rule 2). It must report it
// truthfully: a full volume is "full", not "writable", and the probe itself writes nothing: it used to re-create a
// deleted span folder, which hid the deletion (issue 12 defect 8).

describe('/readyz on a span volume that fills up, turns read-only and disappears', () => {
  let volume: Tmpfs;
  let stack: Stack;
  const readyz = async () => {
    const res = await fetch(`${stack.guardian.url}/readyz`);
    return { http: res.status, ...((await res.json()) as { status: string; span_volume: string }) };
  };

  beforeAll(async () => {
    volume = await mountTmpfs(2 * 1024 * 1024);
    stack = await startStack({ env: { GUARDIAN_DATA_DIR: volume.dir } });
  });
  afterAll(async () => {
    await stack?.close();
    await volume?.unmount();
  });

  it('says writable, then full, then read-only, then missing (read-only when it cannot be created), and stays ready', async () => {
    expect(await readyz()).toMatchObject({ http: 200, status: 'ready', span_volume: 'writable' });

    await volume.fill();
    expect(await readyz()).toMatchObject({ http: 200, status: 'ready', span_volume: 'full' });
    await volume.unfill();
    expect(await readyz()).toMatchObject({ span_volume: 'writable' });

    await volume.readOnly();
    expect(await readyz()).toMatchObject({ http: 200, status: 'ready', span_volume: 'read-only' });
    volume.readWrite();

    await rm(join(volume.dir, 'spans'), { recursive: true });
    expect(await readyz()).toMatchObject({ http: 200, status: 'ready', span_volume: 'missing' });
    // The probe looked; it did not put the folder back.
    expect(existsSync(join(volume.dir, 'spans'))).toBe(false);

    // Missing and impossible to create (a fresh root-owned bind mount, for the image's uid): read-only, not missing.
    await volume.readOnly();
    expect(await readyz()).toMatchObject({ http: 200, status: 'ready', span_volume: 'read-only' });
    volume.readWrite();
    expect(await readyz()).toMatchObject({ span_volume: 'missing' });
  });
});

// The live image check found it (a root-owned bind mount): the handle key guardian makes on the data volume at first
// start (docs/native-compaction.md) stopped the boot when the volume could not be written.
describe('a data volume that is read-only from the first start', () => {
  let volume: Tmpfs;
  let stack: Stack;

  beforeAll(async () => {
    volume = await mountTmpfs(2 * 1024 * 1024);
    await volume.readOnly();
    stack = await startStack({ env: { GUARDIAN_DATA_DIR: volume.dir } });
  });
  afterAll(async () => {
    await stack?.close();
    volume?.readWrite();
    await volume?.unmount();
  });

  it('boots, says read-only, and counts the process-only handle key as a fail-open', async () => {
    const res = await fetch(`${stack.guardian.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ready', span_volume: 'read-only' });
    const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    expect(metrics).toMatch(/guardian_fail_open_total\{stage="archive"\} 1\b/);
  });
});
