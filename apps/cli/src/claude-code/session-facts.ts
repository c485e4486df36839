import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import { listSpans, spanFileName } from '@guardian/archive';

import { CAPTURE_ROUTE } from './capture-ledger';
import { isRecord, parseJsonOrUndefined, parseTranscriptLine } from './transcript-lines';
import {
  assistantParts,
  editedFile,
  toolResults,
  toolSummary,
  userInstruction,
  type ToolUse,
} from './transcript-view';

/** Plain facts about a session, read back from its archived transcript. */
export interface SessionFacts {
  goal: string | null;
  filesEdited: { file: string; edits: number }[];
  openErrors: { call: string; error: string }[];
  lines: number;
}

const LIMITS = { goalChars: 600, files: 30, errors: 10, errorChars: 200 };

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 3)}...` : flat;
}

/** Builds the facts from transcript lines, oldest first. Pure. */
export function sessionFacts(lines: Iterable<Record<string, unknown>>): SessionFacts {
  let goal: string | null = null;
  let count = 0;
  const edits = new Map<string, number>();
  const calls = new Map<string, ToolUse>();
  // Per call summary (`Bash: npm test`): the latest outcome. An error is open until the same call succeeds.
  const outcomes = new Map<string, { isError: boolean; text: string }>();
  for (const line of lines) {
    count += 1;
    goal ??= userInstruction(line);
    for (const use of assistantParts(line).toolUses) {
      calls.set(use.id, use);
      const file = editedFile(use);
      if (file !== null) {
        const n = (edits.get(file) ?? 0) + 1;
        edits.delete(file);
        edits.set(file, n);
      }
    }
    for (const result of toolResults(line)) {
      const use = calls.get(result.toolUseId);
      if (use === undefined) continue;
      const key = toolSummary(use);
      outcomes.delete(key);
      outcomes.set(key, { isError: result.isError, text: result.text });
    }
  }
  return {
    goal: goal === null ? null : clip(goal, LIMITS.goalChars),
    filesEdited: [...edits.entries()].slice(-LIMITS.files).map(([file, n]) => ({ file, edits: n })),
    openErrors: [...outcomes.entries()]
      .filter(([, o]) => o.isError)
      .slice(-LIMITS.errors)
      .map(([call, o]) => ({
        call,
        error: clip(o.text.split('\n').find((l) => l.trim() !== '') ?? '', LIMITS.errorChars),
      })),
    lines: count,
  };
}

const SpanSchema = z.looseObject({
  kind: z.string(),
  route: z.string(),
  first_index: z.number(),
  messages: z.array(z.unknown()),
});

/** Every archived transcript line of the session's capture runs, in transcript order. */
export async function archivedSessionLines(
  spanDir: string,
  runs: string[],
): Promise<Record<string, unknown>[]> {
  const spans: { start: number; messages: unknown[] }[] = [];
  for (const run of runs) {
    for (const { span } of await listSpans({ spanDir, run })) {
      const parsed = SpanSchema.safeParse(
        parseJsonOrUndefined(await fsp.readFile(path.join(spanDir, run, spanFileName(span)), 'utf8')),
      );
      if (!parsed.success || parsed.data.kind !== 'capture' || parsed.data.route !== CAPTURE_ROUTE) continue;
      spans.push({ start: parsed.data.first_index, messages: parsed.data.messages });
    }
  }
  spans.sort((a, b) => a.start - b.start);
  const out: Record<string, unknown>[] = [];
  for (const { messages } of spans) {
    for (const m of messages) {
      const line = isRecord(m) ? m : typeof m === 'string' ? parseTranscriptLine(m) : undefined;
      if (line !== undefined) out.push(line);
    }
  }
  return out;
}
