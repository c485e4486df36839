import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Which span refs (`<run>/<NNNN>.json`) are on disk AND sealed: the file exists and a chain line of its run names
 * it (or a prune record does, for a span the run's own keep-spans rule removed). Read straight from the files, as
 * docs/ARCHIVE_FORMAT.md describes them, so the check does not lean on the code under test.
 */
export async function presentRefs(
  spanDir: string,
  refs: Iterable<string>,
): Promise<{ present: string[]; missing: string[] }> {
  const chains = new Map<string, { sealed: Set<string>; pruned: Set<string> }>();
  const present: string[] = [];
  const missing: string[] = [];
  for (const ref of refs) {
    const [run, file] = ref.split('/');
    if (run === undefined || file === undefined) {
      missing.push(ref);
      continue;
    }
    let chain = chains.get(run);
    if (chain === undefined) {
      chain = { sealed: new Set(), pruned: new Set() };
      const text = await readFile(join(spanDir, run, 'chain.jsonl'), 'utf8').catch(() => '');
      for (const line of text.split('\n')) {
        if (!line.endsWith('}')) continue;
        const entry = JSON.parse(line) as { kind?: string; file?: string; files?: string[] };
        if (entry.kind === 'span' && entry.file) chain.sealed.add(entry.file);
        if (entry.kind === 'prune') for (const f of entry.files ?? []) chain.pruned.add(f);
      }
      chains.set(run, chain);
    }
    const exists = await readFile(join(spanDir, run, file)).then(
      () => true,
      () => false,
    );
    if ((exists && chain.sealed.has(file)) || chain.pruned.has(file)) present.push(ref);
    else missing.push(ref);
  }
  return { present, missing };
}
