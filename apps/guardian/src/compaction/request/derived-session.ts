import { str, type FormatAdapter, type Json } from '../../formats/format-adapter';
import { parseField, parseRange, rangeHas, type Outline, type Range } from '../../formats/json-outline';
import type { ResolvedSession, SessionHeader } from '../handoff';
import { sessionOfConversation, topLevelSystemText } from './session';

/** At most this many leading items are read to derive a session key. */
const MAX_SESSION_ITEMS = 8;
/** Keys remembered per model, and models remembered: a client resends the same leading messages on every turn. */
const PER_MODEL = 8;
const MAX_MODELS = 64;
const TOP_FIELDS = ['system', 'instructions'] as const;

/** The bytes a derived key was made from: the top-level system fields and the leading items, as sent. */
interface Known {
  top: (Buffer | null)[];
  lead: Buffer;
  items: number;
  key: string;
  hash: string;
  ownerHash: string | undefined;
}

/** A request's bytes as the fast path has them: the body, its outline, its items and model, its route's adapter. */
export interface RequestBytes {
  body: Buffer;
  o: Outline;
  itemsKey: string;
  items: readonly Range[];
  model: string;
  adapter: FormatAdapter;
}

/** Team mode: the owner a token named (ARCHITECTURE.md#sessions). */
type RequestOwner = { owner?: string; ownerHash?: string };

/**
 * The seed's session key (model, first system text, first user text) of a request the fast path does not parse
 * (ADR 0013): from its leading items alone, parsed one at a time through the route's own adapter so that it is the
 * key the full path derives, and remembered by their exact bytes, so a conversation's later turns only compare them.
 * Undefined when a few leading items cannot show it (a system message could still come later, or the adapter does
 * not take them): the full path decides those.
 */
export class DerivedSessions {
  private readonly known = new Map<string, Known[]>();

  of(req: RequestBytes, header: SessionHeader, owner?: RequestOwner): ResolvedSession | undefined {
    const { body, o, items, model, adapter } = req;
    // An owner name holds no line break (OWNER_PATTERN): the slot's parts read one way only.
    const slot = `${adapter.route}\n${owner?.owner ?? ''}\n${model}`;
    const hit = this.known.get(slot)?.find((k) => sameBytes(body, o, items, k));
    if (hit) {
      const session: ResolvedSession = {
        key: hit.key,
        hash: hit.hash,
        stateHash: hit.hash,
        fromHeader: false,
        source: 'derived',
      };
      if (hit.ownerHash !== undefined) session.ownerHash = hit.ownerHash;
      return withHeader(session, header);
    }
    const derived = derive(req, header, owner);
    if (derived?.remember) this.remember(slot, body, o, items, derived.items, derived.session);
    return derived?.session;
  }

  private remember(
    slot: string,
    body: Buffer,
    o: Outline,
    items: readonly Range[],
    count: number,
    session: ResolvedSession,
  ): void {
    const list = this.known.get(slot) ?? [];
    if (!this.known.has(slot)) {
      // Model names are the clients' to choose: the memory is bounded by starting over.
      if (this.known.size >= MAX_MODELS) this.known.clear();
      this.known.set(slot, list);
    }
    const top = TOP_FIELDS.map((f) => {
      const r = o.fields.get(f);
      return r ? Buffer.from(body.subarray(r.start, r.end)) : null;
    });
    const lead = Buffer.from(body.subarray(items[0]!.start, items[count - 1]!.end));
    list.unshift({
      top,
      lead,
      items: count,
      key: session.key,
      hash: session.hash,
      ownerHash: session.ownerHash,
    });
    if (list.length > PER_MODEL) list.pop();
  }
}

function sameBytes(body: Buffer, o: Outline, items: readonly Range[], k: Known): boolean {
  if (items.length < k.items) return false;
  const start = items[0]!.start;
  const end = items[k.items - 1]!.end;
  if (end - start !== k.lead.length || body.compare(k.lead, 0, k.lead.length, start, end) !== 0) return false;
  return TOP_FIELDS.every((f, i) => {
    const r = o.fields.get(f);
    const was = k.top[i] ?? null;
    if (!r || !was) return !r && !was;
    return r.end - r.start === was.length && body.compare(was, 0, was.length, r.start, r.end) === 0;
  });
}

function withHeader(session: ResolvedSession, header: SessionHeader): ResolvedSession {
  if (header.kind === 'ignored') session.ignored = { reason: header.reason, warning: header.warning };
  return session;
}

function derive(
  req: RequestBytes,
  header: SessionHeader,
  owner: RequestOwner | undefined,
): { session: ResolvedSession; items: number; remember: boolean } | undefined {
  const { body, o, itemsKey, items, model, adapter } = req;
  const top: Json = { model };
  for (const key of TOP_FIELDS) {
    if (!o.fields.has(key)) continue;
    const value = parseField(body, o, key);
    if (value === undefined) return undefined;
    top[key] = value;
  }
  const parsed: unknown[] = [];
  for (let k = 0; k < items.length && k < MAX_SESSION_ITEMS; k += 1) {
    parsed.push(parseRange(body, items[k]!));
    const conv = adapter.parse({ ...top, [itemsKey]: parsed }, { countTools: false });
    if (!conv) return undefined;
    const last = k === items.length - 1;
    if (!last && !conv.messages.some((m) => m.role === 'user')) continue;
    const hasSystem =
      topLevelSystemText(conv.json.system) !== '' ||
      str(conv.json.instructions) !== '' ||
      conv.messages.some((m) => m.role === 'system');
    // Without a system text so far, one further on would be the one the full path takes; such a key depends on
    // the rest of the request too, so it is not remembered by the leading bytes.
    if (!last && !hasSystem) {
      const rest = { start: items[k + 1]!.start, end: items[items.length - 1]!.end };
      if (rangeHas(body, rest, '"system"') || rangeHas(body, rest, '"developer"')) return undefined;
    }
    return { session: sessionOfConversation(header, conv, owner), items: k + 1, remember: hasSystem };
  }
  return undefined;
}
