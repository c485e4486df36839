import type { Dashboard, DataSourceRef, GridPos, Panel, RowPanel, VariableModel } from '@grafana/schema';

// A typed reader for the dashboard JSON: each function checks the fields @grafana/schema marks required
// (and the ones this project relies on) and builds the schema's own type, so a field that drifts from
// @grafana/schema is a compile error here and a malformed file is a failing test.

export class DashboardError extends Error {
  readonly code = 'DASHBOARD_INVALID';
}

type Json = Record<string, unknown>;

function obj(value: unknown, where: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new DashboardError(`${where}: not an object`);
  return value as Json;
}
function str(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') throw new DashboardError(`${where}: not a non-empty string`);
  return value;
}
function num(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new DashboardError(`${where}: not a number`);
  return value;
}
function arr(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new DashboardError(`${where}: not an array`);
  return value;
}

export interface PromTarget {
  refId: string;
  expr: string;
}

export function toGridPos(value: unknown, where: string): GridPos {
  const o = obj(value, where);
  const pos: GridPos = {
    h: num(o.h, `${where}.h`),
    w: num(o.w, `${where}.w`),
    x: num(o.x, `${where}.x`),
    y: num(o.y, `${where}.y`),
  };
  if (pos.w < 1 || pos.h < 1 || pos.x < 0 || pos.y < 0 || pos.x + pos.w > 24)
    throw new DashboardError(`${where}: outside the 24-column grid`);
  return pos;
}

function toDataSource(value: unknown, where: string): DataSourceRef {
  const o = obj(value, where);
  return { type: str(o.type, `${where}.type`), uid: str(o.uid, `${where}.uid`) };
}

export function toTarget(value: unknown, where: string): PromTarget {
  const o = obj(value, where);
  return { refId: str(o.refId, `${where}.refId`), expr: str(o.expr, `${where}.expr`) };
}

export function toPanel(value: unknown, where: string): Panel {
  const o = obj(value, where);
  const targets = arr(o.targets, `${where}.targets`).map((t, i) => toTarget(t, `${where}.targets[${i}]`));
  if (targets.length === 0) throw new DashboardError(`${where}: no queries`);
  return {
    type: str(o.type, `${where}.type`),
    id: num(o.id, `${where}.id`),
    title: str(o.title, `${where}.title`),
    gridPos: toGridPos(o.gridPos, `${where}.gridPos`),
    datasource: toDataSource(o.datasource, `${where}.datasource`),
    targets: targets.map((t) => ({ ...obj(t, where), ...t })),
    fieldConfig: {
      defaults: obj(obj(o.fieldConfig, `${where}.fieldConfig`).defaults, `${where}.fieldConfig.defaults`),
      overrides: [],
    },
    options: obj(o.options, `${where}.options`),
  };
}

export function toRow(value: unknown, where: string): RowPanel {
  const o = obj(value, where);
  if (typeof o.collapsed !== 'boolean') throw new DashboardError(`${where}.collapsed: not a boolean`);
  return {
    type: 'row',
    id: num(o.id, `${where}.id`),
    title: str(o.title, `${where}.title`),
    collapsed: o.collapsed,
    gridPos: toGridPos(o.gridPos, `${where}.gridPos`),
    panels: arr(o.panels, `${where}.panels`).map((p, i) => toPanel(p, `${where}.panels[${i}]`)),
  };
}

const VARIABLE_TYPES = [
  'query',
  'adhoc',
  'groupby',
  'constant',
  'datasource',
  'interval',
  'textbox',
  'custom',
] as const;

export function toVariable(value: unknown, where: string): VariableModel {
  const o = obj(value, where);
  const type = VARIABLE_TYPES.find((t) => t === o.type);
  if (type === undefined) throw new DashboardError(`${where}.type: not a variable type`);
  const query = typeof o.query === 'string' ? o.query : obj(o.query, `${where}.query`);
  return { name: str(o.name, `${where}.name`), type, query };
}

/** Reads the parsed dashboard file into @grafana/schema's Dashboard type, or throws DashboardError. */
export function toDashboard(value: unknown): Dashboard {
  const o = obj(value, 'dashboard');
  const panels = arr(o.panels, 'dashboard.panels').map((p, i) =>
    obj(p, `panels[${i}]`).type === 'row' ? toRow(p, `panels[${i}]`) : toPanel(p, `panels[${i}]`),
  );
  const time = obj(o.time, 'dashboard.time');
  const templating = arr(obj(o.templating, 'dashboard.templating').list, 'dashboard.templating.list').map(
    (v, i) => toVariable(v, `templating.list[${i}]`),
  );
  return {
    schemaVersion: num(o.schemaVersion, 'dashboard.schemaVersion'),
    title: str(o.title, 'dashboard.title'),
    uid: str(o.uid, 'dashboard.uid'),
    time: { from: str(time.from, 'time.from'), to: str(time.to, 'time.to') },
    templating: { list: templating },
    panels,
  };
}
