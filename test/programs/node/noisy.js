'use strict';
// Writes one long stderr line without a newline that starts like the inspector's own lines.
process.stderr.write(`W${'word '.repeat(4000)}`);
