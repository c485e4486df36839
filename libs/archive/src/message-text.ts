/** Role and plain text of one archived message, whatever API shape it came in (read-only view). */
export interface MessageView {
  role: string;
  text: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function partText(part: unknown): string {
  if (typeof part === 'string') return part;
  if (!isRecord(part)) return '';
  if (typeof part.text === 'string') return part.text;
  // Anthropic tool_use input and tool_result content are searchable too.
  if (part.input !== undefined) return JSON.stringify(part.input);
  if (part.content !== undefined) return contentText(part.content);
  if (typeof part.output === 'string') return part.output;
  return '';
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map(partText)
      .filter((t) => t !== '')
      .join('\n');
  return partText(content);
}

/**
 * Extracts text from OpenAI chat, Anthropic messages, Responses items and Claude Code transcript lines.
 * Tool-call arguments are included so a search finds a file name the model passed to a tool.
 */
export function viewMessage(message: unknown): MessageView {
  if (typeof message === 'string') return { role: 'unknown', text: message };
  if (!isRecord(message)) return { role: 'unknown', text: '' };
  // Claude Code transcript lines wrap the API message in `message`.
  const inner = isRecord(message.message) ? message.message : message;
  const role =
    typeof inner.role === 'string' ? inner.role : typeof message.type === 'string' ? message.type : 'unknown';
  const pieces = [contentText(inner.content)];
  if (Array.isArray(inner.tool_calls)) {
    for (const call of inner.tool_calls) {
      if (isRecord(call) && isRecord(call.function) && typeof call.function.arguments === 'string') {
        pieces.push(call.function.arguments);
      }
    }
  }
  if (typeof inner.arguments === 'string') pieces.push(inner.arguments);
  if (typeof inner.output === 'string') pieces.push(inner.output);
  return { role, text: pieces.filter((p) => p !== '').join('\n') };
}
