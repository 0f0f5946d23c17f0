import type { DebugProtocol } from '@vscode/debugprotocol';
import type { DapConnection } from '../../core/dap/connection.js';

export interface BreakpointSpec {
  line: number;
  condition?: string;
  hitCondition?: string;
  logMessage?: string;
}

export interface BreakpointReport {
  file: string;
  line: number;
  verified: boolean;
  /** Where debugpy actually put it, when that differs from the line asked for. */
  actualLine?: number;
  message?: string;
  condition?: string;
  hitCondition?: string;
  logMessage?: string;
}

/**
 * The breakpoints of one session, by absolute file path, and their last verification. DAP sets
 * a file's breakpoints as a whole, so every change re-sends that file's list.
 */
export class BreakpointBook {
  private readonly byFile = new Map<string, BreakpointSpec[]>();
  private functions: string[] = [];
  private readonly reports = new Map<string, BreakpointReport[]>();
  /** Conditions that do not compile, with the compiler's message. */
  private readonly badConditions = new Map<string, string>();

  noteConditionErrors(errors: Map<string, string>): void {
    for (const [condition, message] of errors) this.badConditions.set(condition, message);
  }

  /** Why a condition cannot work, if it cannot. */
  conditionError(condition: string | undefined): string | undefined {
    const error = condition ? this.badConditions.get(condition) : undefined;
    return error ? `condition ${JSON.stringify(condition)} does not compile: ${error}; this breakpoint would never stop` : undefined;
  }

  /** Adds one line breakpoint (or replaces the one on that line); returns whether anything changed. */
  add(file: string, spec: BreakpointSpec): boolean {
    const list = this.byFile.get(file) ?? [];
    const existing = list.findIndex((b) => b.line === spec.line);
    if (existing >= 0 && JSON.stringify(list[existing]) === JSON.stringify(spec)) return false;
    if (existing >= 0) list[existing] = spec;
    else list.push(spec);
    this.byFile.set(file, list);
    return true;
  }

  replace(file: string, specs: BreakpointSpec[]): void {
    this.byFile.set(file, specs);
  }

  setFunctions(names: string[]): void {
    this.functions = names;
  }

  /** The condition of the line breakpoint at file:line, if it has one. */
  conditionAt(file: string, line: number): string | undefined {
    return this.byFile.get(file)?.find((b) => b.line === line)?.condition;
  }

  files(): string[] {
    return [...this.byFile.keys()];
  }

  /** Sends every file's breakpoints (used while configuring a launch). */
  async applyAll(dap: DapConnection): Promise<BreakpointReport[]> {
    const reports: BreakpointReport[] = [];
    for (const file of this.byFile.keys()) reports.push(...(await this.apply(dap, file)));
    if (this.functions.length > 0) await this.applyFunctions(dap);
    return reports;
  }

  async apply(dap: DapConnection, file: string): Promise<BreakpointReport[]> {
    const specs = this.byFile.get(file) ?? [];
    const body = await dap.request('setBreakpoints', { source: { path: file }, breakpoints: specs });
    const reports = specs.map((spec, i) => report(file, spec, body.breakpoints[i], this.conditionError(spec.condition)));
    this.reports.set(file, reports);
    return reports;
  }

  async applyFunctions(dap: DapConnection): Promise<DebugProtocol.Breakpoint[]> {
    const body = await dap.request('setFunctionBreakpoints', { breakpoints: this.functions.map((name) => ({ name })) });
    return body.breakpoints;
  }

  /** Breakpoints debugpy moved or could not verify: reported with every answer until fixed. */
  problems(): BreakpointReport[] {
    return [...this.reports.values()].flat().filter((r) => !r.verified || r.actualLine !== undefined);
  }
}

function report(file: string, spec: BreakpointSpec, bp: DebugProtocol.Breakpoint | undefined, conditionError?: string): BreakpointReport {
  const out: BreakpointReport = { file, line: spec.line, verified: (bp?.verified ?? false) && !conditionError };
  if (conditionError) {
    out.message = conditionError;
  } else if (bp?.line !== undefined && bp.line !== spec.line) {
    out.actualLine = bp.line;
    out.message = `debugpy moved this breakpoint from line ${spec.line} to line ${bp.line}`;
  } else if (!out.verified) {
    out.message = bp?.message ?? 'debugpy could not verify this breakpoint (is the line code that runs?)';
  }
  if (spec.condition) out.condition = spec.condition;
  if (spec.hitCondition) out.hitCondition = spec.hitCondition;
  if (spec.logMessage) out.logMessage = spec.logMessage;
  return out;
}
