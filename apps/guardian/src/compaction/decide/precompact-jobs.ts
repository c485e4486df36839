import { Injectable } from '@nestjs/common';

/** One background summary of a session's next stretch (answer/precompactor.ts). */
export interface PrecompactJob {
  /** The cut the background summary is for, once chosen (0 before). */
  cut: number;
  abort: AbortController;
  done: Promise<void>;
}

/**
 * The background pre-compactions under way, one per session (ADR 0009). The answer stage starts them; the engine
 * tells this table when the foreground made or reused a cut, which makes a job for an earlier stretch moot. It lives
 * in the decide stage so that the engine never reaches into the stage that follows it.
 */
@Injectable()
export class PrecompactJobs {
  private readonly jobs = new Map<string, PrecompactJob>();

  get size(): number {
    return this.jobs.size;
  }

  has(session: string): boolean {
    return this.jobs.has(session);
  }

  add(session: string, job: PrecompactJob): void {
    this.jobs.set(session, job);
  }

  delete(session: string): void {
    this.jobs.delete(session);
  }

  all(): PrecompactJob[] {
    return [...this.jobs.values()];
  }

  /** The foreground made or reused a cut: a background job for an earlier stretch of this session is moot. */
  moved(session: string, cut: number): void {
    const job = this.jobs.get(session);
    if (job && job.cut > 0 && cut > job.cut) job.abort.abort();
  }
}
