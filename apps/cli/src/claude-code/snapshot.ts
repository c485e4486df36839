import { parseTranscriptLine } from './transcript-lines';
import { assistantParts, checklistItems, toolSummary, userInstruction } from './transcript-view';

/** What compact-guardian keeps before a compaction, taken from the transcript's last lines. */
export interface SnapshotContent {
  instructions: string[];
  checklist: { done: boolean; item: string }[];
  lastAssistantText: string | null;
  actions: string[];
}

// compact-guardian's numbers: last 5 user messages, last AI text up to 1000 chars, last 20 tool calls.
export const SNAPSHOT_LIMITS = {
  instructions: 5,
  instructionChars: 800,
  assistantChars: 1000,
  actions: 20,
  checklist: 30,
};

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

function todoItems(input: Record<string, unknown>): { done: boolean; item: string }[] {
  // TodoWrite is Claude Code's own checklist: {todos: [{content, status}]}.
  if (!Array.isArray(input.todos)) return [];
  const out: { done: boolean; item: string }[] = [];
  for (const todo of input.todos as unknown[]) {
    if (typeof todo !== 'object' || todo === null) continue;
    const { content, status } = todo as { content?: unknown; status?: unknown };
    if (typeof content === 'string') out.push({ done: status === 'completed', item: content });
  }
  return out;
}

/** Builds the snapshot from transcript lines (oldest first). Pure. */
export function buildSnapshot(lines: string[]): SnapshotContent {
  const instructions: string[] = [];
  const checklist = new Map<string, boolean>();
  let lastAssistantText: string | null = null;
  const actions: string[] = [];
  for (const text of lines) {
    const line = parseTranscriptLine(text);
    if (line === undefined) continue;
    const said = userInstruction(line);
    if (said !== null) instructions.push(said);
    const { texts, toolUses } = assistantParts(line);
    for (const t of texts) {
      lastAssistantText = t;
      for (const { done, item } of checklistItems(t)) {
        checklist.delete(item);
        checklist.set(item, done);
      }
    }
    for (const use of toolUses) {
      actions.push(toolSummary(use));
      if (use.name === 'TodoWrite') {
        for (const { done, item } of todoItems(use.input)) {
          checklist.delete(item);
          checklist.set(item, done);
        }
      }
    }
  }
  return {
    instructions: instructions
      .slice(-SNAPSHOT_LIMITS.instructions)
      .map((i) => clip(i, SNAPSHOT_LIMITS.instructionChars)),
    checklist: [...checklist.entries()]
      .slice(-SNAPSHOT_LIMITS.checklist)
      .map(([item, done]) => ({ done, item })),
    lastAssistantText:
      lastAssistantText === null ? null : clip(lastAssistantText, SNAPSHOT_LIMITS.assistantChars),
    actions: actions.slice(-SNAPSHOT_LIMITS.actions),
  };
}

export function isEmptySnapshot(s: SnapshotContent): boolean {
  return (
    s.instructions.length === 0 &&
    s.checklist.length === 0 &&
    s.lastAssistantText === null &&
    s.actions.length === 0
  );
}

/** The snapshot as the markdown block `resume` hands back to Claude Code. */
export function renderSnapshot(s: SnapshotContent): string {
  const out: string[] = [];
  if (s.instructions.length > 0) {
    out.push('## Recent user instructions (oldest first)');
    s.instructions.forEach((text, i) => {
      out.push(`[${i + 1}]${i === s.instructions.length - 1 ? ' (latest)' : ''}`, text);
    });
  }
  if (s.checklist.length > 0) {
    out.push('', '## Checklist as it stood');
    for (const c of s.checklist) out.push(`- [${c.done ? 'x' : ' '}] ${c.item}`);
  }
  if (s.lastAssistantText !== null) out.push('', '## Last assistant text', s.lastAssistantText);
  if (s.actions.length > 0) {
    out.push('', `## Last ${s.actions.length} tool calls (oldest first)`);
    for (const a of s.actions) out.push(`- ${a}`);
  }
  return out.join('\n').trim();
}
