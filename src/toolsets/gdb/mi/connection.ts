// The MI connection moved to core/ so the debugger toolset can share it; this path stays for gdb's imports.
export * from '../../../core/mi/connection.js';
