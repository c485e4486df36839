/**
 * Why a summariser's answer is not used as a summary (issue 32 item 7). A small model (SmolLM2-135M on llama.cpp,
 * at a 4,096 window) answered with transcript-shaped lines that match no real turn (`[1] user: Notes for step 7:
 * ...`), or a bare list `[21]` ... `[97]`; guardian carried those to the model in every later request as "a record
 * of what was said earlier". Such an answer is refused, asked for once more, then stood in for by the checkpoint
 * (ADR 0007).
 */
export type SummaryRefusal =
  /** No `## Must Keep` heading: the prompt ends by asking for exactly that section. */
  | 'no_must_keep'
  /** A `[n] role: text` line whose turn the evicted stretch (or the summary so far) does not hold. */
  | 'invented_line'
  /** More characters than the transcript and the summary so far that it replaces. */
  | 'too_large';

/** What a summary stands in for: the transcript lines of one call and the summary so far it extends. */
export interface ReplacedText {
  /** Every transcript line of the evicted stretch (`[index] role: text`, transcriptLine's shape). */
  lines: readonly string[];
  /** The lines this call carried (a group of `lines`); the size check is against these and `prior`. */
  callLines: readonly string[];
  /** The summary so far, when this call extends one. */
  prior?: string;
}

/** A transcript line as transcriptLine writes it, or as a model quotes one (a bullet or quote mark allowed). */
const QUOTED_LINE = /^\s*(?:[-*>•]\s*)?\[(\d+)\]\s*(user|assistant|system|tool)\s*:\s*(.*)$/i;
/** Where one message's line starts in the transcript (its text may run over several lines). */
const LINE_START = /^\[(\d+)\] (user|assistant|system|tool):/;
/** Ellipses and the stub of a cut quote a model may leave at either end; they are not part of what it quotes. */
const TRIM_MARKS = /^(?:\.{3}|…|["'“”‘’`])+|(?:\.{3}|…|["'“”‘’`])+$/g;

function flat(text: string): string {
  return text.replace(/\s+/g, ' ').trim().toLowerCase();
}

/**
 * The first reason `summary` is refused, or undefined when it may be used. Pure: the same answer and transcript always
 * give the same verdict.
 */
export function refuseSummary(summary: string, replaced: ReplacedText): SummaryRefusal | undefined {
  if (!/^#{1,6}\s*must keep\s*$/im.test(summary)) return 'no_must_keep';
  if (inventedLine(summary, replaced)) return 'invented_line';
  const replacedChars =
    replaced.callLines.reduce((n, l) => n + l.length + 1, 0) + (replaced.prior?.length ?? 0);
  if (summary.length > replacedChars) return 'too_large';
  return undefined;
}

/** True when some transcript-shaped line of the summary quotes a turn the stretch does not hold. */
function inventedLine(summary: string, replaced: ReplacedText): boolean {
  let turns: Map<string, string> | undefined;
  const prior = replaced.prior === undefined ? '' : flat(replaced.prior);
  for (const line of summary.split('\n')) {
    const m = QUOTED_LINE.exec(line);
    if (!m) continue;
    // The summary so far is guardian's own (a checked summary, or a checkpoint): a line it already carries is held.
    if (prior.includes(flat(line.replace(/^\s*[-*>•]\s*/, '')))) continue;
    turns ??= transcriptTurns(replaced.lines);
    const text = turns.get(`${m[1]!} ${m[2]!.toLowerCase()}`);
    if (text === undefined) return true;
    const quoted = flat(m[3] ?? '')
      .replace(TRIM_MARKS, '')
      .trim();
    if (quoted.length > 0 && !text.includes(quoted)) return true;
  }
  return false;
}

/** Each message of the transcript by `index role`, its text flattened (a message's line may span several). */
function transcriptTurns(lines: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of lines) {
    const m = LINE_START.exec(line);
    if (m) out.set(`${m[1]!} ${m[2]!}`, flat(line.slice(m[0].length)));
  }
  return out;
}
