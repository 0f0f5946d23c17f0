'use strict';
// Its source map says its lines come from a file outside the root: a stop here is reported here, never there.
const value = 41 + 1;
console.log(value);
//# sourceMappingURL=data:application/json;base64,eyJ2ZXJzaW9uIjogMywgInNvdXJjZXMiOiBbIi9ldGMvcGFzc3dkIl0sICJtYXBwaW5ncyI6ICJBQUFBO0FBQ0E7QUFDQTtBQUNBO0FBQ0EifQ==
