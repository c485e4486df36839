import { spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** Runs the writer child from source (test/support/swc-register.js), resolves with its exit code and signal. */
export function runWriter(
  env: Record<string, string>,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '-r',
        join(ROOT, 'test', 'support', 'swc-register.js'),
        join(__dirname, 'fixtures', 'writer-child.ts'),
      ],
      {
        env: { ...process.env, GUARDIAN_TEST_CRASH_POINT: '', ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, stdout }));
  });
}
