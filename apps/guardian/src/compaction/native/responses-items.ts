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
      out.push({ type: 'message', role, content: [{ type: 'input_text', text: expanded.text }] });
    }
    return covered <= 0 ? out : out.filter((item, i) => i >= covered || isInstruction(item));
  }
}
