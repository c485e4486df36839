import { runDemo } from './demo';

describe('npm run demo', () => {
  it('prints the seed-shaped table: direct fails from turn 8, the sidecar answers every turn', async () => {
    const report = await runDemo();
    const text = report.lines.join('\n');
    process.stdout.write(`${text}\n`);
    const rows = report.lines.slice(2, 14);
    expect(rows).toHaveLength(12);
    rows.forEach((row, i) => {
      const turn = i + 1;
      expect(row).toMatch(new RegExp(`^\\s*${turn}\\s+\\d+\\s+`));
      if (turn < 8) expect(row).toMatch(/\d+\s+ok\s{2,}/);
      else expect(row).toContain('400 overflow');
      expect(row).toMatch(/ok(, compactions so far: \d+)?$/);
    });
    expect(report.lines[14]).toContain('direct: rejected from turn 8 on. proxy: 12/12 turns answered');
    expect(report.compactions).toBeGreaterThan(0);
    expect(report.summariserCalls).toBeGreaterThan(0);
    expect(report.summariserCalls).toBeLessThan(report.compactions);
    expect(report.archivedMessages).toBeGreaterThan(0);
  });
});
