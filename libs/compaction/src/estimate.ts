import type { Counter, NeutralMessage } from './types';

/** Overhead per message for role markers and separators; chat templates add a few tokens per turn. */
export const MESSAGE_OVERHEAD_CHARS = 12;

export function tokensForChars(chars: number, counter: Counter): number {
  return Math.ceil((chars / counter.charsPerToken) * counter.factor);
}

export function messageTokens(message: NeutralMessage, counter: Counter): number {
  return tokensForChars(message.chars + MESSAGE_OVERHEAD_CHARS, counter);
}

/** Characters of a whole request: every message plus the fixed part (tools array, top-level system). */
export function requestChars(messages: readonly NeutralMessage[], fixedChars: number): number {
  let chars = fixedChars;
  for (const m of messages) chars += m.chars + MESSAGE_OVERHEAD_CHARS;
  return chars;
}

/**
 * Learns how far the character estimate is from the upstream's own count, per (upstream, model).
 * The seed's rule: the highest of the last 20 reported/estimated ratios, clamped to 0.7-1.3, once there are 5
 * samples; before that only a ratio above 1 is applied. Taking the highest errs towards compacting a little early rather than overflowing.
 * Pure state: the caller owns one per model and feeds it samples.
 */
export class Calibration {
  static readonly WINDOW = 20;
  static readonly MIN_SAMPLES = 5;
  static readonly MIN_FACTOR = 0.7;
  static readonly MAX_FACTOR = 1.3;
  private readonly ratios: number[] = [];
  /** The factor for the samples so far: read on every request, changed only by a sample. */
  private current = 1;

  /** Records one sample: the upstream's prompt tokens against guardian's uncalibrated estimate of the same request. */
  observe(reportedTokens: number, estimatedTokens: number): void {
    if (!(reportedTokens > 0) || !(estimatedTokens > 0)) return;
    this.ratios.push(reportedTokens / estimatedTokens);
    if (this.ratios.length > Calibration.WINDOW) this.ratios.shift();
    const highest = Math.min(
      Calibration.MAX_FACTOR,
      Math.max(Calibration.MIN_FACTOR, Math.max(...this.ratios)),
    );
    this.current = this.calibrated ? highest : Math.max(1, highest);
  }

  get samples(): number {
    return this.ratios.length;
  }

  get calibrated(): boolean {
    return this.ratios.length >= Calibration.MIN_SAMPLES;
  }

  /**
   * The factor in force. Calibrated: the highest recent ratio, clamped. Before that, a sample that shows the estimate
   * running low already raises it (never lowers it below 1): the seed held 1.0 until five samples, and Codex's first
   * compactions went out 9% over the budget meanwhile (docs/adr/0003-counting.md, amendment).
   */
  get factor(): number {
    return this.current;
  }
}

/**
 * A reported prompt this far under guardian's own count of what it forwarded is not a tokenizer difference: the
 * calibration accepts ratios down to {@link Calibration.MIN_FACTOR} (0.7), so 0.6 is beyond anything it would learn.
 */
const TRUNCATION_RATIO = 0.6;
/**
 * Below this many reported tokens a low count is not read as a truncation: Ollama has reported only the tokens it
 * did not find in its prompt cache (ollama/ollama#2068, #16428), a few tokens for a long prompt. No backend serving
 * a coding agent truncates to a window this small.
 */
const MIN_TRUNCATED_WINDOW = 1024;

/**
 * True when the upstream answered with a prompt count well under what guardian counted and forwarded: the backend
 * cut the front of the prompt without saying so (Ollama past `num_ctx`, issue 28 item 5). Such a sample must not
 * calibrate, and the reported count is the most the backend kept: its real window, at least.
 */
export function silentlyTruncated(reportedTokens: number, forwardedTokens: number): boolean {
  return reportedTokens >= MIN_TRUNCATED_WINDOW && reportedTokens < forwardedTokens * TRUNCATION_RATIO;
}
