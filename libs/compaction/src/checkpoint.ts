import type { NeutralMessage } from './types';

/** The most a checkpoint takes, in characters (about 500 tokens at 3.5 characters a token). */
export const CHECKPOINT_MAX_CHARS = 1800;
const LINE_CHARS = 160;

function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const end = flat.search(/[.!?](\s|$)/);
  const sentence = end === -1 ? flat : flat.slice(0, end + 1);
  return sentence.length > LINE_CHARS ? `${sentence.slice(0, LINE_CHARS - 1)}…` : sentence;
}

/**
 * A summary written without a model: the opening sentence of each evicted user turn and the names of the tools that
 * were called, newest last, within CHECKPOINT_MAX_CHARS. Used only where the alternative is a certain failure (the
 * upstream already refused the request as too long and the summariser failed too: ADR 0007). The originals stay
 * in the archive; the summary block names the span.
 */
export function checkpointSummary(messages: readonly NeutralMessage[]): string {
  const lines: string[] = [];
  for (const m of messages) {
    if (m.role === 'user' && m.userTyped && m.text.trim()) lines.push(`- user: ${firstSentence(m.text)}`);
    else if (m.role === 'assistant' && m.toolCalls.length > 0) {
      lines.push(`- assistant called ${[...new Set(m.toolCalls.map((c) => c.name))].join(', ')}`);
    }
  }
  const head = `Checkpoint (no model-written summary was available): ${messages.length} earlier message(s); the user's requests in order:`;
  const kept: string[] = [];
  let size = head.length;
  // Newest first when trimming: the latest requests matter most for what comes next.
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? '';
    if (size + line.length + 1 > CHECKPOINT_MAX_CHARS) {
      kept.unshift(`- (${i + 1} earlier line(s) left out; see the archived span)`);
      break;
    }
    kept.unshift(line);
    size += line.length + 1;
  }
  return [head, ...kept].join('\n');
}
