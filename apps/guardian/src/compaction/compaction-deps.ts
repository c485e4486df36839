import { Injectable } from '@nestjs/common';

import { MemoStore } from '@guardian/memo';

import { CaptureService } from './capture.service';
import { SessionTable } from './session-table';
import { SpanRecorder } from './span-recorder';

/** The collaborators the Exchange needs, grouped so the service keeps a short constructor. */
@Injectable()
export class CompactionDeps {
  constructor(
    readonly memo: MemoStore,
    readonly sessions: SessionTable,
    readonly recorder: SpanRecorder,
    readonly capture: CaptureService,
  ) {}
}
