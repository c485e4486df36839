import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** This checkout: three levels above this file (test/works-with/support). */
export const REPO_ROOT = resolve(__dirname, '..', '..', '..');

/**
 * Where the works-with runners keep what they install or build outside the repository (the client CLIs, a
 * llama-server build): `~/.cache/context-guardian`, resolved from the home directory of whoever runs them, so no
 * machine's path is written into the repository.
 */
export const CACHE_DIR = join(homedir(), '.cache', 'context-guardian');

/** The project's shared folder beside the repository checkout (`../shared`: models and their README). */
export const SHARED_DIR = resolve(REPO_ROOT, '..', 'shared');
