import type { IgnoredReason, SessionHeader, SubAgent } from '../compaction/handoff';

// How the door reads who a request says it is from (docs/sessions.md, "How the header is read"): guardian's own
// session header, else a client's own session id, and a sub-agent's id. The request stage then resolves the session
// from what is read here (compaction/request/session.ts).

/**
 * Header values longer than this (in bytes sent) are ignored and the derived key is used (ARCHITECTURE.md#sessions).
 */
export const MAX_SESSION_HEADER_BYTES = 256;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads the header lines as Node delivers them (`headersDistinct`: one string per line, each byte one character,
 * RFC 9110 §5.5). A value that is valid UTF-8 is read as UTF-8, which is what curl and the coding CLIs send; any
 * other byte sequence stays as its bytes (Node's fetch sends `é` as the single byte 0xE9), so both spellings of
 * `josé` name one session. The limit counts bytes on the wire. Whitespace-only is empty (OpenCode sends an empty
 * value when `{env:USER}` is unset). Two lines with different values are ignored rather than guessed between:
 * Node would otherwise join them into `dave, erin`, a session neither developer asked for.
 */
export function readSessionHeader(lines: readonly string[] | undefined): SessionHeader {
  if (lines === undefined || lines.length === 0) return { kind: 'absent' };
  const sent = new Map<string, number>();
  for (const line of lines) {
    const wire = line.trim();
    if (wire === '') continue;
    const bytes = Buffer.from(wire, 'latin1');
    // Keyed by the decoded value: one name sent twice is one name, whichever way each line spelled it.
    sent.set(decodeUtf8(bytes) ?? wire, bytes.length);
  }
  if (sent.size === 0) return ignored('empty', 'empty');
  if (sent.size > 1) return ignored('repeated', `sent ${lines.length} times with different values`);
  const [[value, bytes] = ['', 0]] = sent;
  if (bytes > MAX_SESSION_HEADER_BYTES) return ignored('too_long', `over ${MAX_SESSION_HEADER_BYTES} bytes`);
  return { kind: 'value', value };
}

/**
 * The session ids clients send of their own, in the order they are tried when `X-Guardian-Session` is absent (issue
 * 28 item 1, docs/sessions.md, recorded from each real client): Claude Code's `x-claude-code-session-id` on every
 * request of a session, then Codex's `session-id` and `thread-id`, then OpenCode's `x-session-id` (on every provider,
 * next to an `x-session-affinity` of the same value), then Qwen Code's `session_id` (sent to a self-hosted endpoint
 * only when its settings ask for it: `customHeaders` with `${session_id}`). Each is read like guardian's own header;
 * one that would be ignored (empty, repeated, too long) is skipped for the next.
 */
export const CLIENT_SESSION_HEADERS = [
  'x-claude-code-session-id',
  'session-id',
  'thread-id',
  'x-session-id',
  'session_id',
] as const;

/** The first client session id sent, as a header value with its source; `absent` when none was usable. */
export function readClientSession(
  linesOf: (name: (typeof CLIENT_SESSION_HEADERS)[number]) => readonly string[] | undefined,
): SessionHeader {
  for (const name of CLIENT_SESSION_HEADERS) {
    const read = readSessionHeader(linesOf(name));
    if (read.kind === 'value') return { ...read, source: name };
  }
  return { kind: 'absent' };
}

/**
 * Claude Code's sub-agent headers. 2.1.197 sent `x-claude-code-agent-id` on its sub-agent's request in a real run
 * (test/compaction/fixtures/client-session-ids/claude-code-2.1.197-subagent.json); the parent id, sent only for a
 * sub-agent another one started, is as 2.1.332's request builder reads: not yet seen in a run.
 */
export const SUBAGENT_HEADERS = ['x-claude-code-agent-id', 'x-claude-code-parent-agent-id'] as const;

/**
 * The sub-agent a request comes from, read like the session header (an empty, repeated or over-long id is no id);
 * undefined for the main conversation. A parent id without an agent id of its own names no sub-agent.
 */
export function readSubAgent(
  linesOf: (name: (typeof SUBAGENT_HEADERS)[number]) => readonly string[] | undefined,
): SubAgent | undefined {
  const id = readSessionHeader(linesOf('x-claude-code-agent-id'));
  if (id.kind !== 'value') return undefined;
  const parent = readSessionHeader(linesOf('x-claude-code-parent-agent-id'));
  return parent.kind === 'value' ? { id: id.value, parent: parent.value } : { id: id.value };
}

function ignored(reason: IgnoredReason, detail: string): SessionHeader {
  return {
    kind: 'ignored',
    reason,
    detail,
    warning: `X-Guardian-Session ignored: ${detail}; the derived session key is used`,
  };
}

/** The message of the 400 that GUARDIAN_SESSION_HEADER_REQUIRED answers for a header that is not `value`. */
export function sessionRequiredMessage(header: SessionHeader): string {
  const base = `X-Guardian-Session (1-${MAX_SESSION_HEADER_BYTES} bytes) is required by GUARDIAN_SESSION_HEADER_REQUIRED`;
  return header.kind === 'ignored' ? `${base}; the one sent was ignored: ${header.detail}` : base;
}

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    // Not UTF-8 (a client that sent latin1 bytes): the caller keeps the bytes as they came.
    return undefined;
  }
}
