import { z } from 'zod';

import { sha256Hex } from '@guardian/archive';
import { CodedError } from '@guardian/errors';

/**
 * The JSON Claude Code pipes to a command hook (hooks reference: common fields session_id, transcript_path,
 * cwd, hook_event_name; PreCompact adds trigger, SessionStart adds source, SessionEnd adds reason). Unknown
 * fields are kept: the payload grows between Claude Code versions.
 */
export const HookInputSchema = z.looseObject({
  session_id: z.string().min(1),
  transcript_path: z.string().min(1).optional(),
  hook_event_name: z.string().optional(),
  cwd: z.string().optional(),
  trigger: z.string().optional(),
  source: z.string().optional(),
  reason: z.string().optional(),
});
export type HookInput = z.infer<typeof HookInputSchema>;

export class HookInputError extends CodedError<'CC_BAD_HOOK_INPUT'> {
  override readonly name = 'HookInputError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('CC_BAD_HOOK_INPUT', message, options);
  }
}

/** Parses stdin; throws CC_BAD_HOOK_INPUT (the caller logs it and still exits 0). */
export function parseHookInput(text: string): HookInput {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new HookInputError('stdin is not JSON', { cause });
  }
  const parsed = HookInputSchema.safeParse(raw);
  if (!parsed.success) {
    throw new HookInputError(`hook payload rejected: ${parsed.error.issues[0]?.path.join('.') ?? ''}`);
  }
  return parsed.data;
}

/** The session hash stored in run.json and spans: sha256 of Claude Code's session id (ARCHITECTURE.md#sessions). */
export function sessionHashOf(input: HookInput): string {
  return sha256Hex(input.session_id);
}
