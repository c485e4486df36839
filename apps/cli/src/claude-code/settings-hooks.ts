import type { JSONPath } from 'jsonc-parser';
import { z } from 'zod';

import { CodedError } from '@guardian/errors';

import { appendMember, removeMember } from './json-text-edit';

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

/**
 * Is `command` one of ours, whatever `--command` it was installed with (`context-guardian-claude-code capture`,
 * `node '/opt/cg/bin/context-guardian-claude-code.js' resume`, `npx -y context-guardian-claude-code@0.1.0 capture`,
 * `env GUARDIAN_URL=... context-guardian-claude-code capture`)? The tool's name as a word of its own, and the
 * subcommand as the last word.
 */
export function isOurCommand(command: unknown, sub?: HookSpec['sub']): boolean {
  if (typeof command !== 'string') return false;
  if (!/(?:^|[\s/\\"'])context-guardian-claude-code(?:\.js|\.cmd)?(?:@[\w.^~-]+)?(?:["'\s]|$)/.test(command))
    return false;
  const match = /\s(capture|resume)\s*$/.exec(command);
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

/** The commands of our hook entries, each once. */
export function ourCommands(settings: Settings): string[] {
  const events = [...new Set(HOOK_SPECS.map((s) => s.event))];
  const all = events.flatMap((e) => groupsOf(settings, e).flatMap((g) => g.hooks.map((h) => h.command)));
  return [...new Set(all.filter((c): c is string => isOurCommand(c)))];
}

/**
 * Adds our hook groups after the existing ones of each event, idempotently. Edits the file's text
 * (json-text-edit.ts): every byte outside what is added stays as the user wrote it.
 */
export function mergeHooks(
  text: string,
  file: string,
  base = DEFAULT_COMMAND,
): { text: string; added: string[] } {
  let out = text.trim() === '' ? '{}\n' : text;
  const added: string[] = [];
  for (const spec of HOOK_SPECS) {
    const settings = parseSettings(out, file);
    if (present(settings, spec)) continue;
    const hooks = settings.hooks as Record<string, Group[]> | undefined;
    const group = groupFor(spec, base);
    if (hooks === undefined) out = appendMember(out, [], { [spec.event]: [group] }, 'hooks');
    else if (hooks[spec.event] === undefined) out = appendMember(out, ['hooks'], [group], spec.event);
    else out = appendMember(out, ['hooks', spec.event], group);
    added.push(spec.event);
  }
  return { text: added.length === 0 ? text : out, added };
}

/** The next entry of ours to take out: a group that holds only ours, else one hook of ours in a shared group. */
function nextOfOurs(settings: Settings): { event: string; path: JSONPath } | undefined {
  for (const event of new Set(HOOK_SPECS.map((s) => s.event))) {
    const groups = groupsOf(settings, event);
    for (const [g, group] of groups.entries()) {
      const ours = group.hooks.flatMap((h, i) => (isOurCommand(h.command) ? [i] : []));
      if (ours.length === 0) continue;
      if (ours.length === group.hooks.length) return { event, path: ['hooks', event, g] };
      return { event, path: ['hooks', event, g, 'hooks', ours[0]!] };
    }
  }
  return undefined;
}

/**
 * The exact reverse of {@link mergeHooks}, on the text as well: removes every entry of ours, then an event or the
 * `hooks` key only when that left it empty. What install added comes out whole, so the file reads as before.
 */
export function removeHooks(text: string, file: string): { text: string; removed: string[] } {
  const removed = new Set<string>();
  let out = text;
  for (let next = nextOfOurs(parseSettings(out, file)); next; next = nextOfOurs(parseSettings(out, file))) {
    out = removeMember(out, next.path);
    removed.add(next.event);
  }
  for (const event of removed) {
    if (groupsOf(parseSettings(out, file), event).length === 0) out = removeMember(out, ['hooks', event]);
  }
  const hooks = parseSettings(out, file).hooks as Record<string, Group[]> | undefined;
  if (removed.size > 0 && hooks !== undefined && Object.keys(hooks).length === 0)
    out = removeMember(out, ['hooks']);
  return { text: out, removed: [...removed] };
}

/** The command that registers the MCP server (seed "Install"); `server` is how it is run (toolCommand). */
export function mcpAddCommand(server = 'context-guardian-mcp'): string {
  return `claude mcp add --scope user --transport stdio context-guardian -- ${server}`;
}

/** Its reverse, which `uninstall` prints: the registration lives in Claude Code's own config, not in settings.json. */
export function mcpRemoveCommand(): string {
  return 'claude mcp remove --scope user context-guardian';
}
