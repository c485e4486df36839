// `npm run bench [-- overhead|instructions|compaction|archive|memo|precompact|prefix-cache|redis-timeout|keep-facts|paste-cost|state-probes|tool-clearing|soak|codex-turn ...] [-- options]`: the
// named benchmarks, or all but soak, one after the other (never at once: each one measures a machine it must have to
// itself). Each writes bench/results/<name>.txt. Arguments after a second `--` go to the named benchmarks
// (keep-facts: --upstream URL ...).
import { performance } from 'node:perf_hooks';

import * as archive from './archive-bench';
import * as codexTurn from './codex-turn';
import * as compaction from './compaction';
import * as instructions from './instructions';
import * as memo from './memo-bench';
import * as overhead from './overhead';
import * as pasteCost from './paste-cost';
import * as precompact from './precompact';
import * as prefixCache from './prefix-cache';
import * as redisTimeout from './redis-timeout';
import * as soak from './soak';
import * as keepFacts from './retention/keep-facts';
import * as stateProbes from './retention/state-probes';
import * as toolClearing from './tool-clearing';

interface Bench {
  run(args?: readonly string[]): Promise<void>;
}

const BENCHES: Record<string, Bench> = {
  overhead,
  instructions,
  compaction,
  archive,
  memo,
  precompact,
  'prefix-cache': prefixCache,
  'redis-timeout': redisTimeout,
  'keep-facts': keepFacts,
  'paste-cost': pasteCost,
  'state-probes': stateProbes,
  'tool-clearing': toolClearing,
  soak,
  'codex-turn': codexTurn,
};

async function main(): Promise<void> {
  // Names are the bare words before a second `--`; a word right after a `--flag` is that flag's value
  // (`--gap-ms 300`). What follows a second `--` is handed to each benchmark (keep-facts reads its options there).
  const argv = process.argv.slice(2);
  const split = argv.indexOf('--');
  const options = split === -1 ? [] : argv.slice(split + 1);
  const args = split === -1 ? argv : argv.slice(0, split);
  const asked = args.filter((a, i) => !a.startsWith('-') && !(args[i - 1] ?? '').startsWith('--'));
  const unknown = asked.filter((a) => !(a in BENCHES));
  if (unknown.length > 0) {
    process.stderr.write(
      `unknown benchmark: ${unknown.join(', ')}; choose from ${Object.keys(BENCHES).join(', ')}\n`,
    );
    process.exit(2);
  }
  // The soak takes minutes and several processes, the instruction count runs the sidecar under valgrind (minutes
  // per build), and codex-turn needs Codex installed: they run when named (`npm run bench -- soak`), not by default.
  const names =
    asked.length > 0
      ? asked
      : Object.keys(BENCHES).filter((name) => !['soak', 'instructions', 'codex-turn'].includes(name));
  for (const name of names) {
    const start = performance.now();
    process.stdout.write(`\n== ${name}\n`);
    await BENCHES[name]!.run(options);
    process.stdout.write(`== ${name} took ${((performance.now() - start) / 1000).toFixed(1)} s\n`);
  }
}

main().then(
  // Servers and pools are closed by each benchmark; exit anyway so a stray keep-alive timer cannot hold the run.
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
