import { constants } from 'node:fs';
import { access, statfs } from 'node:fs/promises';
import { dirname } from 'node:path';

import { Injectable } from '@nestjs/common';
import { codeOf } from '@guardian/errors';

import { GuardianConfig } from '../config/guardian-config';

/** Below this much free space a span (a compaction of a long stretch, a spilled paste) is not likely to fit. */
export const FULL_BELOW_BYTES = 1024 * 1024;

export type SpanVolumeState = 'writable' | 'full' | 'read-only' | 'missing';

/**
 * Whether the span volume can take a span, for /readyz to report (never to gate on, ARCHITECTURE.md#fail-open
 * rule 2). It only looks: it used to create the span folder, which hid a deleted volume behind "writable" (issue 12 defect 8).
 * `missing` is what a fresh install reports until the first span creates the folder; a folder that is missing AND
 * cannot be created (its nearest existing parent is not writable, as a root-owned bind mount is for uid 10001) is
 * `read-only`: that is the operator's only hint before the first compaction defers its span.
 */
@Injectable()
export class SpanVolumeProbe {
  constructor(private readonly config: GuardianConfig) {}

  async check(): Promise<SpanVolumeState> {
    const dir = this.config.paths.spanDir;
    try {
      await access(dir, constants.W_OK);
      const fs = await statfs(dir);
      return fs.bavail * fs.bsize < FULL_BELOW_BYTES ? 'full' : 'writable';
    } catch (err) {
      // Reported, not raised: guardian defers spans on an unwritable volume (ARCHITECTURE.md#fail-open rule 3).
      const code = codeOf(err) ?? '';
      if (code !== 'ENOENT') return 'read-only';
      return (await creatable(dir)) ? 'missing' : 'read-only';
    }
  }
}

/** Whether `dir` could be created: its nearest existing ancestor is writable. Looks only; creates nothing. */
async function creatable(dir: string): Promise<boolean> {
  for (let parent = dirname(dir); ; parent = dirname(parent)) {
    try {
      await access(parent, constants.W_OK);
      return true;
    } catch (err) {
      const code = codeOf(err) ?? '';
      if (code !== 'ENOENT' || dirname(parent) === parent) return false;
    }
  }
}
