import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { FolderAppender } from './durable-fs';

describe('FolderAppender', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'appender-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('lands every line of many appends at once, each file in the order they were made', async () => {
    const appender = new FolderAppender(join(root, 'log'));
    const files = ['a.jsonl', 'b.jsonl', 'c.jsonl'];
    await Promise.all(
      Array.from({ length: 300 }, (_x, i) => appender.append(files[i % 3]!, `${JSON.stringify({ i })}\n`)),
    );
    // And one more after the rush: a drain that just ended must not leave it waiting.
    await appender.append('a.jsonl', '{"i":300}\n');
    for (const [k, file] of files.entries()) {
      const got = readFileSync(join(root, 'log', file), 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { i: number }).i);
      const want = Array.from({ length: 100 }, (_x, n) => n * 3 + k);
      expect(got).toEqual(k === 0 ? [...want, 300] : want);
    }
  });

  it('tells each caller when its line could not be written', async () => {
    const appender = new FolderAppender(join(root, 'file-in-the-way', 'log'));
    // A file where the folder should be: mkdir fails for every append of the batch.
    writeFileSync(join(root, 'file-in-the-way'), 'x');
    const results = await Promise.allSettled([appender.append('a', 'x\n'), appender.append('b', 'y\n')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
