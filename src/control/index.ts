export { ControlPlane, LOCAL_KEY, AUTH_FAILED, QUOTA_EXCEEDED, PERMISSION_DENIED } from './plane.js';
export type { Admission, AuditReport, CallInfo, FinishCall, QuotaStatus, Refusal } from './plane.js';
export type { KeyContext } from './keys.js';
export type { ToolInfo } from './scopes.js';
export type { AuditQuery } from './store.js';
export type { AuditRecord, ChainState } from './audit.js';
export { openControlPlane, openStore, defaultNodeId } from './open.js';
