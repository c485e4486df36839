import { sessionHash as storedSessionHash } from '@guardian/archive';
import { hashTexts, type NeutralMessage } from '@guardian/compaction';

import { isObject, str, type ParsedConversation } from '../../formats/format-adapter';
import type { AnswerFacts, ResolvedSession, SessionHeader, SessionSource } from '../handoff';

/**
 * The session (ARCHITECTURE.md#sessions): the `X-Guardian-Session` value when one was sent and used, else a hash of
 * model + first system message + first user message (the seed's rule). Raw values never reach a path or a label.
 */
export function resolveSession(
  header: SessionHeader,
  model: string,
  messages: readonly Pick<NeutralMessage, 'role' | 'text'>[],
  firstSystem: string,
  owner?: { owner?: string; ownerHash?: string },
): ResolvedSession {
  // Team mode (ARCHITECTURE.md#sessions): the owner is part of the session, the derived key's too, so two developers who paste
  // the same first messages, or send the same header value, never share a session.
  const scoped = (key: string): Pick<ResolvedSession, 'key' | 'hash' | 'ownerHash'> =>
    owner?.owner === undefined
      ? { key, hash: sessionHash(key) }
      : { key: `${owner.owner}/${key}`, hash: sessionHash(key, owner.owner), ownerHash: owner.ownerHash };
  if (header.kind === 'value') {
    const source: SessionSource = header.source ?? 'x-guardian-session';
    const named = scoped(header.value);
    const session: ResolvedSession = {
      ...named,
      stateHash: named.hash,
      fromHeader: true,
      source,
      name: header.value,
    };
    if (header.agent === undefined) return session;
    // A header value holds no line break (Node refuses CR and LF), so `<value>\nagent:<id>` names no other session.
    return {
      ...session,
      agent: header.agent,
      stateHash: sessionHash(`${header.value}\nagent:${header.agent.id}`, owner?.owner),
    };
  }
  const system = firstSystem || messages.find((m) => m.role === 'system')?.text || '';
  const user = messages.find((m) => m.role === 'user')?.text ?? '';
  const key = `derived:${hashTexts(model, '\n', system, '\n', user).slice(0, 16)}`;
  const derived = scoped(key);
  const session: ResolvedSession = {
    ...derived,
    stateHash: derived.hash,
    fromHeader: false,
    source: 'derived',
  };
  if (header.kind === 'ignored') session.ignored = { reason: header.reason, warning: header.warning };
  return session;
}

/**
 * The session of a parsed request: the header, else the seed's key from its model, first system and first user text;
 * in team mode scoped to the owner.
 */
export function sessionOfConversation(
  header: SessionHeader,
  conv: Pick<ParsedConversation, 'model' | 'messages' | 'json'>,
  owner?: { owner?: string; ownerHash?: string },
): ResolvedSession {
  const firstSystem = topLevelSystemText(conv.json.system) || str(conv.json.instructions);
  return resolveSession(header, conv.model, conv.messages, firstSystem, owner);
}

/** Anthropic's top-level `system` as text, whether a string or text blocks (Claude Code sends blocks). */
export function topLevelSystemText(system: unknown): string {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) return '';
  return system
    .filter((b): b is Record<string, unknown> => isObject(b) && b.type === 'text')
    .map((b) => str(b.text))
    .join('\n');
}

/** Keys hashed lately: a client sends the same header on every request, and sha256 is the costly part (ADR 0013). */
const HASHED = new Map<string, string>();
const MAX_HASHED = 4096;

/**
 * The stored form of a session key (libs/archive owns the rule, so the recall tools hash a raw value the same way);
 * `/guardian/usage?session=<key>` looks a session up by it.
 */
export function sessionHash(key: string, owner?: string): string {
  // An owner name holds no line break (OWNER_PATTERN), so the two parts of the memo key read one way only.
  const memo = `${owner ?? ''}\n${key}`;
  const known = HASHED.get(memo);
  if (known !== undefined) return known;
  const hash = storedSessionHash(key, owner);
  // Keys are the clients' to choose: the memory is bounded by starting over (a miss only costs a hash).
  if (HASHED.size >= MAX_HASHED) HASHED.clear();
  HASHED.set(memo, hash);
  return hash;
}

/**
 * The session's optional facts on an answer's facts, each set only when the session has it: the owner, the name and
 * source it was sent with, and whether a sub-agent sent the request. Assigned, not spread: on every answered request
 * spreads of little objects cost more than the rest of the facts (overhead bench profile).
 */
export function addSessionFacts(facts: AnswerFacts, session: ResolvedSession): void {
  if (session.ownerHash !== undefined) facts.ownerHash = session.ownerHash;
  if (session.name !== undefined) facts.sessionName = session.name;
  if (session.source !== undefined) facts.sessionSource = session.source;
  if (session.agent !== undefined) facts.subagent = true;
}
