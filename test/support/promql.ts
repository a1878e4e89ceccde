import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/** The monitoring files idpool ships (deploy/). */
export const RULES_FILE = join(__dirname, '..', '..', 'deploy', 'prometheus', 'idpool-rules.yml');
export const RULES_TEST_FILE = join(__dirname, '..', '..', 'deploy', 'prometheus', 'idpool-rules.test.yml');
const DASHBOARD_FILE = join(__dirname, '..', '..', 'deploy', 'grafana', 'idpool-dashboard.json');

export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A PromQL expression and where it was found (for failure messages). */
export interface Expression {
  where: string;
  expr: string;
}

export function readRules(): Rule[] {
  const doc = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

export function ruleExpressions(): Expression[] {
  return readRules().map((r) => ({ where: `rule ${r.record ?? r.alert}`, expr: r.expr }));
}

interface Panel {
  id?: number;
  title?: string;
  type?: string;
  panels?: Panel[];
  targets?: { refId?: string; expr?: string }[];
}

export interface Dashboard {
  schemaVersion: number;
  panels: Panel[];
  templating: {
    list: { name: string; type: string; query?: string | { query?: string }; datasource?: unknown }[];
  };
  [key: string]: unknown;
}

export function readDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
}

/** Every panel, rows' collapsed panels included. */
export function allPanels(dashboard: Dashboard): Panel[] {
  return dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

/**
 * Every query of the dashboard as PromQL: panel targets, and the template
 * variables' queries (`label_values(selector, label)` reads `selector`).
 * Grafana's variables are replaced by values of their kind, so promtool can
 * parse the result.
 */
export function dashboardExpressions(dashboard: Dashboard): Expression[] {
  const out: Expression[] = [];
  for (const panel of allPanels(dashboard)) {
    for (const target of panel.targets ?? []) {
      if (target.expr !== undefined)
        out.push({ where: `panel ${panel.id} "${panel.title}" ${target.refId}`, expr: grafanaToPromql(target.expr) });
    }
  }
  for (const variable of dashboard.templating.list) {
    if (variable.type !== 'query') continue;
    const query = typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '');
    const labelValues = /^\s*label_values\((.*),\s*[a-zA-Z_]\w*\s*\)\s*$/s.exec(query);
    const queryResult = /^\s*query_result\((.*)\)\s*$/s.exec(query);
    const expr = labelValues?.[1] ?? queryResult?.[1];
    if (expr === undefined)
      throw new Error(
        `variable ${variable.name}: query ${JSON.stringify(query)} is neither label_values(selector, label) nor query_result(expr)`,
      );
    out.push({ where: `variable ${variable.name}`, expr: grafanaToPromql(expr) });
  }
  return out;
}

/** Grafana's `$__rate_interval` and friends become a duration, `$var`/`${var}` a plain value. */
function grafanaToPromql(expr: string): string {
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\$(\w+)/g, (_m, braced: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare!;
    return name.startsWith('__') ? '5m' : 'value';
  });
}

const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'start', 'end']);
const LABEL_LIST = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

/** A metric selector in an expression: its name and the label names its matchers use. */
export interface Selector {
  metric: string;
  labels: string[];
}

/**
 * The metric selectors of a PromQL expression: every metric name it reads
 * (not functions, aggregations, keywords, or label names in `by (…)`,
 * `on (…)` and matchers), with the labels matched on each.
 */
export function selectorsOf(expr: string): Selector[] {
  const out: Selector[] = [];
  let i = 0;
  const skipString = (at: number): number => {
    const quote = expr[at];
    let j = at + 1;
    while (j < expr.length && expr[j] !== quote) j += expr[j] === '\\' && quote !== '`' ? 2 : 1;
    return j + 1;
  };
  /** Reads a `{…}` matcher list from `at`; returns the label names and where it ends. */
  const matchers = (at: number): { labels: string[]; end: number } => {
    const labels: string[] = [];
    let j = at + 1;
    while (j < expr.length && expr[j] !== '}') {
      const c = expr[j];
      if (c === '"' || c === "'" || c === '`') j = skipString(j);
      else if (/[a-zA-Z_]/.test(c)) {
        const m = /^[a-zA-Z_]\w*/.exec(expr.slice(j))!;
        labels.push(m[0]);
        j += m[0].length;
      } else j++;
    }
    return { labels, end: j + 1 };
  };
  const skipParenGroup = (at: number): number => {
    let j = at;
    while (j < expr.length && /\s/.test(expr[j])) j++;
    if (expr[j] !== '(') return at;
    while (j < expr.length && expr[j] !== ')') j++;
    return j + 1;
  };
  while (i < expr.length) {
    const c = expr[i];
    if (c === '"' || c === "'" || c === '`') {
      i = skipString(i);
    } else if (c === '#') {
      while (i < expr.length && expr[i] !== '\n') i++;
    } else if (c === '[') {
      while (i < expr.length && expr[i] !== ']') i++;
      i++;
    } else if (c === '{') {
      // A selector without a name before it (`{__name__=…}`): none here.
      const { labels, end } = matchers(i);
      out.push({ metric: '', labels });
      i = end;
    } else if (/[0-9.]/.test(c)) {
      const m = /^(?:0x[0-9a-fA-F]+|[0-9.]+(?:[eE][+-]?[0-9]+)?(?:ms|[smhdwy])*)+/.exec(expr.slice(i));
      i += m ? m[0].length : 1;
    } else if (/[a-zA-Z_:]/.test(c)) {
      const ident = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(expr.slice(i))![0];
      i += ident.length;
      let j = i;
      while (j < expr.length && /\s/.test(expr[j])) j++;
      const lower = ident.toLowerCase();
      if (LABEL_LIST.has(lower)) {
        i = skipParenGroup(i);
      } else if (expr[j] === '(' || AGGREGATIONS.has(lower) || KEYWORDS.has(lower)) {
        // A function call, an aggregation (`sum by (…) (…)`) or a keyword.
      } else {
        let labels: string[] = [];
        if (expr[j] === '{') {
          const read = matchers(j);
          labels = read.labels;
          i = read.end;
        }
        out.push({ metric: ident, labels });
      }
    } else {
      i++;
    }
  }
  return out;
}

/** What a Prometheus text exposition declares: every sample name (histogram parts included) and the labels seen on each. */
export function exposedMetrics(text: string): Map<string, Set<string>> {
  const names = new Map<string, Set<string>>();
  const add = (name: string) => {
    if (!names.has(name)) names.set(name, new Set());
    return names.get(name)!;
  };
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\w+)/.exec(line);
    if (type) {
      const [, name, kind] = type;
      if (kind === 'histogram') for (const part of ['_bucket', '_sum', '_count']) add(name + part);
      else if (kind === 'summary') for (const part of ['', '_sum', '_count']) add(name + part);
      else add(name);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s/.exec(line);
    if (!sample) throw new Error(`unparsable exposition line: ${line}`);
    const labels = add(sample[1]);
    for (const m of (sample[3] ?? '').matchAll(/([a-zA-Z_]\w*)="/g)) labels.add(m[1]);
  }
  return names;
}

/** Names of samples (not only declared families) in an exposition. */
export function sampledMetrics(text: string): Set<string> {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    out.add(/^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0]);
  }
  return out;
}
