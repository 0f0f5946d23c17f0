// The one containment check lives in core/paths.ts; this name stays for the modules that import it here.
export { containment, type Containment } from '../../../core/paths.js';
