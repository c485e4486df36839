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
  /** A transcript-shaped line (`[n] role: text`, `User: text`, ...) whose text the evicted stretch does not hold. */
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

/**
 * A transcript-shaped line, in any of the shapes models write one (issue 32 item 7 and its audit): `[7] user: ...` as
 * transcriptLine writes it, and `user: ...`, `User: ...`, `**[7] user:** ...`, `- **User**: ...`, `Turn 7 (user):
 * ...`, `#7 user: ...`, `(7) user: ...`, `7. user: ...`, `Human: ...`, each after any bullet or quote mark. Groups: the
 * turn number in one of its five forms (or none), the role, the text.
 */
const QUOTED_LINE =
  /^\s*(?:[-*>•]\s*)*(?:\*\*|__)?\s*(?:\[(\d+)\]|\((\d+)\)|#(\d+)|(\d+)[.)]|(?:turn|message|msg)\s*#?(\d+))?\s*[([]?\s*(user|assistant|system|tool|human|ai)\s*[)\]]?\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.*)$/i;
/** A line of nothing but turn numbers (`[21] [32]`, or `[21]` alone): a reference to turns, quoting none. */
const BARE_TURNS = /^\s*(?:[-*>•]\s*)*(?:\[\d+\][\s,]*)+$/;
/** The names a model gives the two sides of a chat, as the transcript names them. */
const ROLE: Readonly<Record<string, string>> = { human: 'user', ai: 'assistant' };
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

/**
 * True when some transcript-shaped line of the summary quotes what the stretch does not hold: a turn it does not have
 * (by number and role), a text that turn did not say, or, without a number, a text no turn of that role said. A line
 * that names a role and quotes nothing (`**User:**` over a list) is not a quote; a line of bare turn numbers is held
 * only when the stretch has every one of them.
 */
function inventedLine(summary: string, replaced: ReplacedText): boolean {
  let turns: Map<string, string> | undefined;
  const prior = replaced.prior === undefined ? '' : flat(replaced.prior);
  for (const line of summary.split('\n')) {
    const bare = BARE_TURNS.test(line);
    const m = bare ? null : QUOTED_LINE.exec(line);
    if (!bare && !m) continue;
    // The summary so far is guardian's own (a checked summary, or a checkpoint): a line it already carries is held.
    if (prior.includes(flat(line.replace(/^\s*[-*>•]\s*/, '')))) continue;
    turns ??= transcriptTurns(replaced.lines);
    if (!m) {
      const held = new Set([...turns.keys()].map((k) => k.split(' ')[0]));
      if ([...line.matchAll(/\[(\d+)\]/g)].some((n) => !held.has(n[1]))) return true;
      continue;
    }
    const index = m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5];
    const said = (m[6] ?? '').toLowerCase();
    const role = ROLE[said] ?? said;
    const quoted = flat(m[7] ?? '')
      .replace(/^(?:\*\*|__)|(?:\*\*|__)$/g, '')
      .replace(TRIM_MARKS, '')
      .trim();
    if (index !== undefined) {
      const text = turns.get(`${index} ${role}`);
      if (text === undefined) return true;
      if (quoted.length > 0 && !text.includes(quoted)) return true;
    } else if (quoted.length > 0 && !saidBy(turns, role, quoted)) return true;
  }
  return false;
}

/** True when some turn of `role` holds `quoted`. */
function saidBy(turns: ReadonlyMap<string, string>, role: string, quoted: string): boolean {
  for (const [key, text] of turns) if (key.endsWith(` ${role}`) && text.includes(quoted)) return true;
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
