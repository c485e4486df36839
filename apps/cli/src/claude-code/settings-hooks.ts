import { z } from 'zod';
import { CodedError } from '@guardian/errors';

/** Seed: "PreCompact and SessionEnd, timeout 30", plus SessionStart with matcher compact for `resume`. */
export const HOOK_TIMEOUT_S = 30;
export const DEFAULT_COMMAND = 'context-guardian-claude-code';

interface HookSpec {
  event: 'PreCompact' | 'SessionEnd' | 'SessionStart';
  sub: 'capture' | 'resume';
  matcher?: string;
}

export const HOOK_SPECS: readonly HookSpec[] = [
  { event: 'PreCompact', sub: 'capture' },
  { event: 'SessionEnd', sub: 'capture' },
  // Compact only: Claude Code replays saved context on resume and runs SessionStart again then (seed).
  { event: 'SessionStart', sub: 'resume', matcher: 'compact' },
];

export type Settings = Record<string, unknown>;

export class SettingsError extends CodedError<'CC_SETTINGS_INVALID'> {
  override readonly name = 'SettingsError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('CC_SETTINGS_INVALID', message, options);
  }
}

const GroupSchema = z.looseObject({
  matcher: z.string().optional(),
  hooks: z.array(z.looseObject({ command: z.string().optional() })),
});
const SettingsSchema = z.looseObject({ hooks: z.record(z.string(), z.array(GroupSchema)).optional() });
type Group = z.infer<typeof GroupSchema>;

/** Parses a settings file's text; anything that is not a JSON object with a well-formed `hooks` is refused. */
export function parseSettings(text: string, file: string): Settings {
  let raw: unknown;
  try {
    raw = text.trim() === '' ? {} : JSON.parse(text);
  } catch (cause) {
    throw new SettingsError(
      `${file} is not valid JSON; fix it or pass --settings PATH (nothing was changed)`,
      { cause },
    );
  }
  const parsed = SettingsSchema.safeParse(raw);
  if (!parsed.success) {
    const at = parsed.error.issues[0]?.path.join('.') ?? '';
    throw new SettingsError(`${file}: unexpected shape at "${at}" (nothing was changed)`);
  }
  // The raw object, not zod's copy: zod reorders keys, and the user's file should change only where we add.
  return raw as Settings;
}

function commandFor(base: string, sub: HookSpec['sub']): string {
  return `${base} ${sub}`;
}

/** Is `command` one of ours (any install path: `context-guardian-claude-code capture`, `node .../context-guardian-claude-code.js resume`)? */
export function isOurCommand(command: unknown, sub?: HookSpec['sub']): boolean {
  if (typeof command !== 'string') return false;
  const match = /(?:^|[\s/"'])context-guardian-claude-code(?:\.js)?["']?\s+(capture|resume)\s*$/.exec(
    command,
  );
  return match !== null && (sub === undefined || match[1] === sub);
}

function groupFor(spec: HookSpec, base: string): Group {
  const hook = { type: 'command', command: commandFor(base, spec.sub), timeout: HOOK_TIMEOUT_S };
  return spec.matcher === undefined ? { hooks: [hook] } : { matcher: spec.matcher, hooks: [hook] };
}

/** The `hooks` block to paste into settings.json. */
export function hooksSnippet(base = DEFAULT_COMMAND): { hooks: Record<string, Group[]> } {
  const hooks: Record<string, Group[]> = {};
  for (const spec of HOOK_SPECS) hooks[spec.event] = [groupFor(spec, base)];
  return { hooks };
}

function groupsOf(settings: Settings, event: string): Group[] {
  const hooks = settings.hooks as Record<string, Group[]> | undefined;
  return hooks?.[event] ?? [];
}

function present(settings: Settings, spec: HookSpec): boolean {
  return groupsOf(settings, spec.event).some(
    (g) =>
      (spec.matcher === undefined || g.matcher === spec.matcher) &&
      g.hooks.some((h) => isOurCommand(h.command, spec.sub)),
  );
}

/** Which of our hooks a settings object holds, as `Event` or `Event:matcher`. */
export function installedHooks(settings: Settings): string[] {
  return HOOK_SPECS.filter((s) => present(settings, s)).map((s) =>
    s.matcher === undefined ? s.event : `${s.event}:${s.matcher}`,
  );
}

/** Adds our hook groups next to the existing ones, never touching those; idempotent. */
export function mergeHooks(
  settings: Settings,
  base = DEFAULT_COMMAND,
): { settings: Settings; added: string[] } {
  const next = structuredClone(settings);
  const added: string[] = [];
  for (const spec of HOOK_SPECS) {
    if (present(next, spec)) continue;
    const hooks = (next.hooks ??= {}) as Record<string, Group[]>;
    hooks[spec.event] = [...(hooks[spec.event] ?? []), groupFor(spec, base)];
    added.push(spec.event);
  }
  return { settings: next, added };
}

/** The exact reverse: removes our hook entries, and a group, event or `hooks` key only when that left it empty. */
export function removeHooks(settings: Settings): { settings: Settings; removed: string[] } {
  const next = structuredClone(settings);
  const removed: string[] = [];
  const hooks = next.hooks as Record<string, Group[]> | undefined;
  if (hooks === undefined) return { settings: next, removed };
  for (const event of [...new Set(HOOK_SPECS.map((s) => s.event))]) {
    const groups = hooks[event];
    if (groups === undefined) continue;
    const kept: Group[] = [];
    for (const group of groups) {
      const hooksLeft = group.hooks.filter((h) => !isOurCommand(h.command));
      if (hooksLeft.length === group.hooks.length) kept.push(group);
      else if (hooksLeft.length > 0) kept.push({ ...group, hooks: hooksLeft });
    }
    if (kept.length === groups.length && kept.every((g, i) => g === groups[i])) continue;
    removed.push(event);
    if (kept.length > 0) hooks[event] = kept;
    else delete hooks[event];
  }
  if (removed.length > 0 && Object.keys(hooks).length === 0) delete next.hooks;
  return { settings: next, removed };
}

/** The command that registers the MCP server (seed "Install"). */
export function mcpAddCommand(): string {
  return 'claude mcp add --scope user --transport stdio context-guardian -- context-guardian-mcp';
}
