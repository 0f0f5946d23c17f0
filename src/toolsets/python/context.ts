import type { ToolsetEnv } from '../../mcp/toolset.js';
import type { PythonService } from './service.js';

/**
 * What the python tools share. The service (sessions, the DAP adapter, debugpy's launch) loads
 * with the first call or REST request, not at start. The tools and routes are given `service`, a view that
 * stands for it: every call awaits `load()` before it runs, so the view is only used once the
 * service is there.
 */
export interface PythonContext {
  service: PythonService;
  load(): Promise<PythonService>;
  /** The service once loaded. */
  loaded(): PythonService | undefined;
}

export function pythonContext(env: ToolsetEnv): PythonContext {
  let service: PythonService | undefined;
  let loading: Promise<PythonService> | undefined;
  const view = new Proxy({} as PythonService, {
    get: (_target, key) => {
      if (!service) throw new Error('the python service is used before it was loaded');
      const value: unknown = Reflect.get(service, key);
      return typeof value === 'function' ? value.bind(service) : value;
    },
  });
  return {
    service: view,
    load: () =>
      (loading ??= import('./service.js').then(({ PythonService }) => {
        service = new PythonService(env.config, env.log, env.sessionExpired?.bind(env));
        return service;
      })),
    loaded: () => service,
  };
}
