import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { readSpans } from '../compaction/support';
import { startReplica, type Replica } from '../replicas/replica-process';

/**
 * Issue 12 defect 5: the compaction and spill path took ~36 times the body in memory (a 10 MB paste peaked at 445 MB),
 * so under `--max-old-space-size=512`, about what Node picks in the chart's 1 GiB pod, a 45 MB paste killed the
 * process. The built sidecar runs here with that heap and must serve such a paste, spilled and compacted.
 * (The peak RSS by body size is a benchmark figure: `npm run bench -- soak`, docs/BENCHMARKS.md.)
 */
const MB = 1024 * 1024;
const LINE = '2026-12-01T10:00:00Z INFO worker-7 processed batch 4411 in 37 ms, queue depth 12, retry 0\n';
const paste = (bytes: number): string => LINE.repeat(Math.ceil(bytes / LINE.length)).slice(0, bytes);

describe('a 45 MB paste through the built sidecar under a 512 MB heap', () => {
  let stub: StubBackend;
  let guardian: Replica | undefined;
  let dataDir: string;

  beforeAll(async () => {
    stub = await startStub({ window: 32768 });
    dataDir = await mkdtemp(join(tmpdir(), 'cg-heap-'));
    guardian = await startReplica({
      env: {
        NODE_OPTIONS: '--max-old-space-size=512',
        GUARDIAN_UPSTREAM_URL: stub.baseUrl,
        GUARDIAN_DATA_DIR: dataDir,
      },
    });
  });

  afterAll(async () => {
    await guardian?.stop();
    await stub.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function post(messages: unknown[]): Promise<number> {
    const res = await fetch(`${guardian!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-guardian-session': `heap-${messages.length}` },
      body: JSON.stringify({ model: 'stub-model', messages }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  it('spills one 45 MB message: answered, forwarded as head and tail, archived whole', async () => {
    const status = await post([
      { role: 'system', content: 'You review logs.' },
      { role: 'user', content: `Remember this: the deploy key is FACT-HEAP-45.\n${paste(45 * MB)}` },
    ]);
    expect(status).toBe(200);
    const sent = stub.requests.filter((r) => r.route === 'chat' && !r.isSummary).at(-1)!;
    expect(sent.body.length).toBeLessThan(1 * MB);
    expect(sent.body.toString('utf8')).toContain('FACT-HEAP-45');
    const spans = await readSpans(join(dataDir, 'spans'));
    expect(spans.filter((s) => s.oversized)).toHaveLength(1);
  });

  it('compacts a 45 MB history of six pastes: answered, summarised, archived', async () => {
    const messages: unknown[] = [{ role: 'system', content: 'You review logs.' }];
    for (let i = 0; i < 6; i++)
      messages.push(
        { role: 'user', content: `Log part ${i}:\n${paste(7.5 * MB)}` },
        { role: 'assistant', content: 'ok' },
      );
    messages.push({ role: 'user', content: 'What failed?' });
    expect(await post(messages)).toBe(200);
    expect(stub.requests.some((r) => r.isSummary)).toBe(true);
    const sent = stub.requests.filter((r) => r.route === 'chat' && !r.isSummary).at(-1)!;
    expect(sent.body.length).toBeLessThan(1 * MB);
  });
});
