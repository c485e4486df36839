import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { startSidecarProcess, type SidecarProcess } from '../faults/support/sidecar-process';
import { overBudgetChat, WINDOW_ENV } from './support';
import { until } from '../support/wait';

// Many dashboards open at once (a team's screens, a status wall) each hold one live stream. Guardian fans events
// out to all of them, and Node's listener-leak warning, which the operator's log used to show past 100 clients
// (issue 12 defect 8), stays silent: the built sidecar runs as `npm start` does and its stderr is read.

const CLIENTS = 150;

function openLive(url: string): Promise<{ req: ClientRequest; text: () => string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const req = httpRequest(
      `${url}/guardian/events`,
      { headers: { accept: 'text/event-stream' }, agent: false },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.once('data', () => resolve({ req, text: () => text }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe(`${CLIENTS} live event streams at once`, () => {
  let stub: StubBackend;
  let sidecar: SidecarProcess;
  let dataDir: string;
  beforeAll(async () => {
    stub = await startStub({ window: 8192 });
    dataDir = await mkdtemp(join(tmpdir(), 'cg-live-'));
    sidecar = await startSidecarProcess({
      ...WINDOW_ENV,
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
    });
  });
  afterAll(async () => {
    sidecar?.kill('SIGKILL');
    await stub?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('each receives the next compaction, and Node warns about nothing', async () => {
    const streams = await Promise.all(Array.from({ length: CLIENTS }, () => openLive(sidecar.url)));
    const res = await fetch(`${sidecar.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: overBudgetChat({ tag: 'live-many' }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const got = () => streams.filter((s) => s.text().includes('event: compaction')).length;
    await until(`the compaction event on all ${CLIENTS} streams`, () => got() >= CLIENTS);
    expect(got()).toBe(CLIENTS);
    for (const s of streams) s.req.destroy();
    expect(sidecar.stderr()).not.toContain('MaxListenersExceededWarning');
  });
});
