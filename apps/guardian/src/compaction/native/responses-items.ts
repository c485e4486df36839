import { Injectable } from '@nestjs/common';

import { GuardianError } from '../../http/http-error';
import { NativeHandles } from './native-handles';
import { NativeReporter } from './native-reporter';
import { COMPACTION_ITEM_TYPES, isInstruction, isObj } from './responses-shapes';

/** A compaction item of any provider's naming (ours are opened; another's is refused as not ours). */
export function isCompactionItem(item: unknown): boolean {
  return isObj(item) && typeof item.type === 'string' && COMPACTION_ITEM_TYPES.has(item.type);
}

/** Instructions, not conversation: a summary never stands for them, so they stay where the client put them. */
/** The blocks expand() made, so a summary of them can read them as the user's (asUser). */
const BLOCKS = new WeakSet<object>();

/**
 * The items with each expanded block as a user message: what a new summary of them reads. A block is sent on as a
 * `developer` message, which the engine reads as instructions, not typed words; as the user's, its pins and standing
 * instructions are carried into the next block too (the chain keeps them, as a `/compact` of it does).
 */
export function asUser(items: readonly unknown[]): unknown[] {
  return items.map((item) => (isObj(item) && BLOCKS.has(item) ? { ...item, role: 'user' } : item));
}

/**
 * The client's own instructions (`system`, `developer` items): kept where they are when a summary stands for the
 * rest. A block expand() made is a `developer` message too, but it is conversation, summarised with the rest.
 */
export function isClientInstruction(item: unknown): boolean {
  return isInstruction(item) && !(isObj(item) && BLOCKS.has(item));
}

/**
 * Compaction items sent back in a Responses `input` (issue 27 item 1), each replaced by guardian's summary block, so
 * the backend never sees one. Items before the newest threshold item are what it stands for (it was made of that
 * turn's whole input, docs/native-compaction.md): they are dropped, as OpenAI's guide lets clients drop them, save the
 * instructions. A handle that does not verify, or is another developer's, is refused and counted.
 */
@Injectable()
export class ResponsesItems {
  constructor(
    private readonly handles: NativeHandles,
    private readonly reporter: NativeReporter,
  ) {}

  async expand(
    items: readonly unknown[],
    role: 'developer' | 'user',
    owner: string | undefined,
  ): Promise<unknown[]> {
    const out: unknown[] = [];
    let covered = -1;
    for (const item of items) {
      if (!isCompactionItem(item) || !isObj(item)) {
        out.push(item);
        continue;
      }
      const handle = typeof item.encrypted_content === 'string' ? item.encrypted_content : '';
      let expanded;
      try {
        expanded = await this.handles.expand(handle, owner);
      } catch (err) {
        if (err instanceof GuardianError) this.reporter.handleRefused('responses', err, owner);
        throw err;
      }
      this.reporter.handle('responses', expanded.outcome, {
        session: expanded.claims.session.slice(0, 8),
        owner_hash: owner ?? null,
      });
      if (expanded.claims.kind === 'threshold') covered = out.length;
      const block = { type: 'message', role, content: [{ type: 'input_text', text: expanded.text }] };
      BLOCKS.add(block);
      out.push(block);
    }
    return covered <= 0 ? out : out.filter((item, i) => i >= covered || isClientInstruction(item));
  }
}
