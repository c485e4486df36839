import { Injectable } from '@nestjs/common';

/**
 * Which background job a request's conversation has: one per conversation of a session, keyed by the session and the
 * prefix hash of the conversation's first message. A session may carry more than one conversation (Qwen Code sends a
 * side request with its own system prompt and tools every turn): keyed by the session alone, the side request's job
 * was refused as busy behind the main one's, and its next cut waited on the summariser.
 */
export function conversationJob(session: string, hashes: readonly string[]): string {
  return `${session}:${hashes[1] ?? ''}`;
}

/** One background summary of a conversation's next stretch (answer/precompactor.ts). */
export interface PrecompactJob {
  /** The cut the background summary is for, once chosen (0 before). */
  cut: number;
  abort: AbortController;
  done: Promise<void>;
}

/**
 * The background pre-compactions under way, one per conversation (ADR 0009, conversationJob). The answer stage starts them; the engine
 * tells this table when the foreground made or reused a cut, which makes a job for an earlier stretch moot. It lives
 * in the decide stage so that the engine never reaches into the stage that follows it.
 */
@Injectable()
export class PrecompactJobs {
  private readonly jobs = new Map<string, PrecompactJob>();

  get size(): number {
    return this.jobs.size;
  }

  has(conversation: string): boolean {
    return this.jobs.has(conversation);
  }

  add(conversation: string, job: PrecompactJob): void {
    this.jobs.set(conversation, job);
  }

  delete(conversation: string): void {
    this.jobs.delete(conversation);
  }

  all(): PrecompactJob[] {
    return [...this.jobs.values()];
  }

  /** The foreground made or reused a cut: a background job for an earlier stretch of this conversation is moot. */
  moved(conversation: string, cut: number): void {
    const job = this.jobs.get(conversation);
    if (job && job.cut > 0 && cut > job.cut) job.abort.abort();
  }
}
