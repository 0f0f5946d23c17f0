// The toolset interfaces live in src/mcp/ (below both server/ and toolsets/); this path stays for old imports.
export * from '../mcp/toolset.js';
