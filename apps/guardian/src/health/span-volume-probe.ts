import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';

import { Injectable } from '@nestjs/common';

import { GuardianConfig } from '../config/guardian-config';

/** Whether the span volume can be written, for /readyz to report (never to gate on). */
@Injectable()
export class SpanVolumeProbe {
  constructor(private readonly config: GuardianConfig) {}

  async check(): Promise<'writable' | 'read-only' | 'missing'> {
    const dir = this.config.paths.spanDir;
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await access(dir, constants.W_OK);
      return 'writable';
    } catch (err) {
      // Reported, not raised: guardian defers spans on an unwritable volume (CONTRACTS §2.3).
      const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
      return code === 'ENOENT' ? 'missing' : 'read-only';
    }
  }
}
