import { Injectable } from '@nestjs/common';
import { z } from 'zod';

import type { OwnedRoute } from '../../formats/owned-route';
import { GuardianError } from '../../http/http-error';
import type { PrepareInput } from '../handoff';
import type { NativeOutcome } from './native-outcome';
import { NativeReporter } from './native-reporter';
import { NativeStretch } from './native-stretch';
import { withCompactionItem } from './responses-answer';
import { asUser, isClientInstruction } from './responses-items';
import { compactionItem, isObj } from './responses-shapes';

type Obj = Record<string, unknown>;

/** `context_management` of a Responses request (the `openai` SDK's ResponseCreateParams.ContextManagement). */
const contextManagementSchema = z.array(
  z.looseObject({
    type: z.string(),
    compact_threshold: z.number().int().positive().nullish(),
  }),
);

const forward = (json: Obj): NativeOutcome => ({ kind: 'forward', body: Buffer.from(JSON.stringify(json)) });

/**
 * OpenAI's server-side compaction (`context_management: [{type: "compaction", compact_threshold: N}]`) served for a
 * backend that has none (issue 27 item 1, OpenAI's Compaction guide): when the request guardian measures crosses N,
 * the turn's whole input is summarised behind one handle; the backend answers the instructions, guardian's summary
 * block and the input from the newest user message on; and the answer carries the `compaction` item first in its
 * output. The field itself is never forwarded. Without a threshold guardian's own budget compacts, as for any request.
 */
@Injectable()
export class ResponsesThreshold {
  constructor(
    private readonly stretch: NativeStretch,
    private readonly reporter: NativeReporter,
  ) {}

  async apply(
    request: Obj & { input: unknown[] },
    managed: unknown,
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
  ): Promise<NativeOutcome> {
    const parsed = contextManagementSchema.safeParse(managed);
    const other = parsed.success ? parsed.data.find((e) => e.type !== 'compaction') : undefined;
    if (!parsed.success || other)
      throw new GuardianError(
        'GUARDIAN_BAD_REQUEST',
        `context_management: only [{"type": "compaction", "compact_threshold": <tokens>}] is supported${other ? `, not ${JSON.stringify(other.type)}` : ''}`,
        400,
      );
    const threshold = Math.min(...parsed.data.map((e) => e.compact_threshold ?? Infinity));
    const items = request.input;
    const tail = items.findLastIndex((i) => isObj(i) && i.role === 'user');
    // Something before the newest user message that a summary could stand for (instructions stay as they are).
    const foldable = items.slice(0, Math.max(tail, 0)).some((i) => !isClientInstruction(i));
    const measured =
      Number.isFinite(threshold) && foldable
        ? await this.stretch.measure(inputFor(Buffer.from(JSON.stringify(request)), 'responses'))
        : undefined;
    if (!measured || measured.total <= threshold) {
      this.reporter.entry('responses_threshold', 'not_needed', 'responses');
      return forward(request);
    }
    const whole = { ...request, input: asUser(items), stream: false };
    const done = await this.stretch.compact(inputFor(Buffer.from(JSON.stringify(whole)), 'responses'), {
      sealContent: false,
      kind: 'threshold',
    });
    this.reporter.entry('responses_threshold', 'applied', 'responses', done.said);
    const block = { type: 'message', role: 'developer', content: [{ type: 'input_text', text: done.block }] };
    const input = [...items.slice(0, tail).filter(isClientInstruction), block, ...items.slice(tail)];
    const item = compactionItem(done.handle);
    return {
      kind: 'forward',
      body: Buffer.from(JSON.stringify({ ...request, input })),
      answer: (upstream) => withCompactionItem(upstream, item),
    };
  }
}
