/**
 * A line diff of two small texts (settings files) with two lines of context around each change. Written here
 * because no diff library is among the dependencies and settings files are a few hundred lines at most.
 */
export function lineDiff(before: string, after: string, context = 2): string {
  const lines = (text: string): string[] => (text === '' ? [] : text.replace(/\n$/, '').split('\n'));
  const a = lines(before);
  const b = lines(after);
  // Longest common subsequence table, filled from the end.
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      const row = lcs[i] as number[];
      row[j] =
        a[i] === b[j] ? (lcs[i + 1]?.[j + 1] ?? 0) + 1 : Math.max(lcs[i + 1]?.[j] ?? 0, row[j + 1] ?? 0);
    }
  }
  const ops: { mark: ' ' | '-' | '+'; text: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push({ mark: ' ', text: a[i] ?? '' });
      i += 1;
      j += 1;
    } else if (j < b.length && (i >= a.length || (lcs[i]?.[j + 1] ?? 0) >= (lcs[i + 1]?.[j] ?? 0)))
      ops.push({ mark: '+', text: b[j++] ?? '' });
    else ops.push({ mark: '-', text: a[i++] ?? '' });
  }
  const near = ops.map((_, k) =>
    ops.slice(Math.max(0, k - context), k + context + 1).some((o) => o.mark !== ' '),
  );
  const out: string[] = [];
  ops.forEach((op, k) => {
    if (near[k] === true) out.push(`${op.mark} ${op.text}`);
    else if (near[k - 1] === true) out.push('  ...');
  });
  return out.join('\n');
}
