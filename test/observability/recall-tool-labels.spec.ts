// The recall tools' names are listed twice: in @guardian/compaction (the MCP server registers them) and in
// @guardian/telemetry, which may import no other lib and pre-creates one series per tool (issue 30 item 3).
import { RECALL_TOOL_NAMES } from '@guardian/compaction';
import { GuardianMetrics, RECALL_TOOL_LABELS } from '@guardian/telemetry';

describe('guardian_recall_tool_calls_total', () => {
  it('pre-creates exactly the tools the recall MCP server registers', async () => {
    expect([...RECALL_TOOL_LABELS].sort()).toEqual([...RECALL_TOOL_NAMES].sort());
    const text = await new GuardianMetrics().registry.metrics();
    for (const tool of RECALL_TOOL_NAMES)
      expect(text).toContain(`guardian_recall_tool_calls_total{tool="${tool}"} 0`);
  });
});
