import { hash } from 'node:crypto';

import type { NeutralMessage } from '@guardian/compaction';

import type { FormatAdapter, Json, ParsedConversation } from '../../formats/format-adapter';
import { outlineOnce, stringField, type Range } from '../../formats/json-outline';

export type ReadResult =
  { kind: 'conversation'; conv: ParsedConversation } | { kind: 'not-json' } | { kind: 'not-understood' };

/**
 * One conversation's last request, as bytes and as read: a client resends its whole history on every turn, so the
 * next request finds most of its items here, compared byte for byte, and reuses their parsed form, their message,
 * its digest and the prefix hashes up to them.
 */
interface Slot {
  bytes: Buffer;
  /** Each item's start and length in `bytes`. */
  at: number[];
  length: number[];
  items: unknown[];
  messages: NeutralMessage[];
  /** Prefix hashes of `messages`, as far as they were computed (shared with the conversation that made them). */
  prefix: string[];
}

/** Bytes of items kept for reuse in all; the least recently used conversation goes first. */
const MAX_BYTES = 8 * 1024 * 1024;
/** A request bigger than this (a huge paste) is read as it is and not kept. */
const MAX_SLOT_BYTES = 4 * 1024 * 1024;
/** Leading bytes of the first item that, with its length, tell one conversation's slot from another's. */
const KEY_BYTES = 4096;

/**
 * Reads an owned request into the engine's conversation (ADR 0013: serialise each message once). The body's outline
 * gives each item's bytes; an item whose bytes equal the same position in this conversation's last request is taken
 * as read then (its parsed form, its message, its digest), and only new items are parsed. The same result as
 * `JSON.parse` then `adapter.parse`, which is also the way taken for anything the outline does not cover.
 */
export class ConversationReader {
  private readonly slots = new Map<string, Slot>();
  private bytes = 0;

  read(adapter: FormatAdapter, body: Buffer, opts: { countTools: boolean; sessionKey: string }): ReadResult {
    const o = outlineOnce(body, [adapter.itemsKey, 'tools']);
    const array = o?.fields.get(adapter.itemsKey);
    const ranges = o?.items.get(adapter.itemsKey);
    if (!o || !array || !ranges) return parseWhole(adapter, body, opts);
    let json: Json;
    try {
      json = JSON.parse(
        `${body.toString('utf8', 0, array.start)}[]${body.toString('utf8', array.end)}`,
      ) as Json;
    } catch {
      // The outline does not check what is inside strings: let JSON.parse give the verdict on the whole body.
      return parseWhole(adapter, body, opts);
    }
    const key = slotKey(adapter, body, o.fields, ranges, opts.sessionKey);
    const slot = key === undefined ? undefined : this.take(key);
    // A client resends its history as it was: one compare finds all of last turn's items unchanged, where one per item
    // cost a tenth of a millisecond on a 354-item request (issue 16). Anything else is compared item by item.
    const shared = slot ? sharedItems(body, ranges, slot) : 0;
    const items: unknown[] = slot ? slot.items.slice(0, shared) : [];
    const messages: NeutralMessage[] = slot ? slot.messages.slice(0, shared) : [];
    let same = shared;
    for (let i = shared; i < ranges.length; i += 1) {
      const r = ranges[i]!;
      const known = slot && sameBytes(body, r, slot, i) ? i : -1;
      if (known === i && same === i) same += 1;
      let item: unknown;
      let message: NeutralMessage | undefined;
      if (known === i) {
        item = slot!.items[i];
        message = slot!.messages[i];
      } else {
        try {
          item = JSON.parse(body.toString('utf8', r.start, r.end));
        } catch {
          return parseWhole(adapter, body, opts);
        }
        message = adapter.readItem(item);
        if (!message) return { kind: 'not-understood' };
        // Shared with later turns of the conversation: nothing may change it (a shallow guard; code only reads it).
        if (typeof item === 'object' && item !== null) Object.freeze(item);
      }
      items.push(item);
      messages.push(message!);
    }
    json[adapter.itemsKey] = items;
    const conv = adapter.readRequest(json, items, messages, opts);
    if (!conv) return { kind: 'not-understood' };
    const prefix = slot ? slot.prefix.slice(0, Math.min(same, slot.prefix.length - 1) + 1) : [];
    conv.raw = { body, array, items: ranges, fields: o.fields };
    conv.prefix = prefix;
    if (key !== undefined) this.keep(key, body, ranges, items, messages, prefix);
    return { kind: 'conversation', conv };
  }

  private take(key: string): Slot | undefined {
    const slot = this.slots.get(key);
    if (!slot) return undefined;
    this.slots.delete(key);
    this.bytes -= slot.bytes.length;
    return slot;
  }

  private keep(
    key: string,
    body: Buffer,
    ranges: Range[],
    items: unknown[],
    messages: NeutralMessage[],
    prefix: string[],
  ): void {
    const first = ranges[0];
    const last = ranges[ranges.length - 1];
    if (!first || !last || last.end - first.start > MAX_SLOT_BYTES) return;
    // The body itself when it owns its memory (a big body is one allocation of its own), else a copy of the items:
    // a slice would hold whatever larger buffer it was cut from.
    const own = body.byteOffset === 0 && body.buffer.byteLength === body.length;
    const bytes = own ? body : Buffer.from(body.subarray(first.start, last.end));
    const base = own ? 0 : first.start;
    const slot: Slot = {
      bytes,
      at: ranges.map((r) => r.start - base),
      length: ranges.map((r) => r.end - r.start),
      items,
      messages,
      prefix,
    };
    this.slots.set(key, slot);
    this.bytes += bytes.length;
    for (const [oldest, s] of this.slots) {
      if (this.bytes <= MAX_BYTES) break;
      this.slots.delete(oldest);
      this.bytes -= s.bytes.length;
    }
  }
}

/** A body read whole, with `JSON.parse` and the adapter: what the outline's way must agree with. */
export function parseWhole(adapter: FormatAdapter, body: Buffer, opts: { countTools: boolean }): ReadResult {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return { kind: 'not-json' };
  }
  const conv = adapter.parse(json, opts);
  return conv ? { kind: 'conversation', conv } : { kind: 'not-understood' };
}

/**
 * How many leading items equal the slot's, when all the slot's items that the request resends are unchanged (the
 * request repeats or extends the last one); else 0. Equal bytes from the first item on, scanned by the same outline,
 * give the same items, so one compare of the whole stretch stands for one per item; the offsets are checked too.
 */
function sharedItems(body: Buffer, ranges: readonly Range[], slot: Slot): number {
  const n = Math.min(ranges.length, slot.at.length);
  const first = ranges[0];
  const base = slot.at[0];
  if (n === 0 || !first || base === undefined) return 0;
  for (let i = 0; i < n; i += 1) {
    const r = ranges[i]!;
    if (r.start - first.start !== slot.at[i]! - base || r.end - r.start !== slot.length[i]) return 0;
  }
  const end = ranges[n - 1]!.end;
  const same = body.compare(slot.bytes, base, base + (end - first.start), first.start, end) === 0;
  return same ? n : 0;
}

function sameBytes(body: Buffer, r: Range, slot: Slot, i: number): boolean {
  const at = slot.at[i];
  const length = slot.length[i];
  if (at === undefined || length !== r.end - r.start) return false;
  return body.compare(slot.bytes, at, at + length, r.start, r.end) === 0;
}

/** Which conversation a request continues: route, model, session header, and its first item's length and start. */
function slotKey(
  adapter: FormatAdapter,
  body: Buffer,
  fields: Map<string, Range>,
  ranges: readonly Range[],
  sessionKey: string,
): string | undefined {
  const first = ranges[0];
  if (!first) return undefined;
  const model = stringField(body, { fields, items: new Map() }, 'model') ?? '';
  const lead = hash(
    'sha1',
    body.subarray(first.start, Math.min(first.end, first.start + KEY_BYTES)),
    'base64',
  );
  return `${adapter.route}\n${model}\n${sessionKey}\n${first.end - first.start}\n${lead}`;
}
