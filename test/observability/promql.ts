// A small PromQL reader for the dashboard and alert checks: it tokenizes an expression, checks that its
// brackets balance and that every call names a PromQL function, and returns the metric names it selects.
// Hand-written because no maintained PromQL parser ships for Node; promtool (the real parser) checks the
// same expressions in promtool.int-spec.ts.

export type TokenKind = 'ident' | 'number' | 'string' | 'op' | 'open' | 'close' | 'comma';
export interface Token {
  kind: TokenKind;
  text: string;
}

export class PromqlError extends Error {
  readonly code = 'PROMQL_INVALID';
}

// Grafana's interval macros stand where a duration goes; anything else starting with `$` outside a string
// (a template variable in a metric or function position) is refused.
const GRAFANA_DURATIONS =
  /\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}/g;

const FUNCTIONS = new Set([
  'abs',
  'absent',
  'absent_over_time',
  'avg',
  'avg_over_time',
  'bottomk',
  'ceil',
  'changes',
  'clamp',
  'clamp_max',
  'clamp_min',
  'count',
  'count_over_time',
  'count_values',
  'delta',
  'deriv',
  'exp',
  'floor',
  'group',
  'histogram_count',
  'histogram_fraction',
  'histogram_quantile',
  'histogram_sum',
  'idelta',
  'increase',
  'irate',
  'label_join',
  'label_replace',
  'last_over_time',
  'ln',
  'log10',
  'log2',
  'max',
  'max_over_time',
  'min',
  'min_over_time',
  'predict_linear',
  'quantile',
  'quantile_over_time',
  'rate',
  'resets',
  'round',
  'scalar',
  'sgn',
  'sort',
  'sort_desc',
  'sqrt',
  'stddev',
  'stdvar',
  'sum',
  'sum_over_time',
  'time',
  'timestamp',
  'topk',
  'vector',
]);
// Keywords followed by a parenthesised label list.
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2']);

const PATTERNS: [TokenKind | 'space', RegExp][] = [
  ['space', /^\s+/],
  ['string', /^"(?:[^"\\]|\\.)*"|^'(?:[^'\\]|\\.)*'|^`[^`]*`/],
  ['number', /^(?:\d+(?:ms|[smhdwy]))+|^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/],
  ['ident', /^[A-Za-z_:][A-Za-z0-9_:]*/],
  ['op', /^(?:==|!=|<=|>=|=~|!~|[-+*/%^<>=])/],
  ['open', /^[({[]/],
  ['close', /^[)}\]]/],
  ['comma', /^,/],
];

export function tokenize(expr: string): Token[] {
  let rest = expr.replace(GRAFANA_DURATIONS, '5m');
  const tokens: Token[] = [];
  while (rest.length > 0) {
    const match = PATTERNS.map(([kind, re]) => [kind, re.exec(rest)] as const).find(([, m]) => m !== null);
    if (match === undefined || match[1] === null)
      throw new PromqlError(`cannot read "${rest.slice(0, 20)}" in ${expr}`);
    const [kind, m] = match;
    if (kind !== 'space') tokens.push({ kind, text: m[0] });
    rest = rest.slice(m[0].length);
  }
  return tokens;
}

const PAIRS: Record<string, string> = { '(': ')', '{': '}', '[': ']' };

/** The metric names an expression selects; throws PromqlError on unbalanced brackets or unknown functions. */
export function metricNames(expr: string): string[] {
  const tokens = tokenize(expr);
  const stack: string[] = [];
  const names: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const tok = tokens[i]!;
    const next = tokens[i + 1];
    if (tok.kind === 'open') {
      stack.push(PAIRS[tok.text]!);
      continue;
    }
    if (tok.kind === 'close') {
      if (stack.pop() !== tok.text) throw new PromqlError(`unbalanced "${tok.text}" in ${expr}`);
      continue;
    }
    if (tok.kind !== 'ident') continue;
    const inside = stack[stack.length - 1];
    if (inside === '}' || inside === ']') continue; // a label name or part of a range
    if (LABEL_LIST_KEYWORDS.has(tok.text)) {
      if (next?.text === '(') i = skipGroup(tokens, i + 1, expr);
      continue;
    }
    if (KEYWORDS.has(tok.text)) continue;
    // A call, or an aggregation whose grouping comes first: `sum by (le) (...)`.
    if (next?.text === '(' || next?.text === 'by' || next?.text === 'without') {
      if (!FUNCTIONS.has(tok.text)) throw new PromqlError(`unknown function ${tok.text} in ${expr}`);
      continue;
    }
    names.push(tok.text);
  }
  if (stack.length > 0) throw new PromqlError(`unclosed bracket in ${expr}`);
  if (tokens.length === 0) throw new PromqlError('empty expression');
  return names;
}

// Skips `( label, label )` starting at the "(" token; returns the index of the matching ")".
function skipGroup(tokens: Token[], open: number, expr: string): number {
  for (let j = open + 1; j < tokens.length; j++) {
    const tok = tokens[j]!;
    if (tok.text === ')') return j;
    if (tok.kind !== 'ident' && tok.kind !== 'comma') throw new PromqlError(`bad label list in ${expr}`);
  }
  throw new PromqlError(`unclosed label list in ${expr}`);
}
