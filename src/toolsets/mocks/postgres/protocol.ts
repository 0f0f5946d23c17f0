/**
 * PostgreSQL protocol constants (protocol.html "Message Formats"), the one place they are written:
 * the sniffer, the frontend parser and the replayer use these.
 */

/** PostgreSQL's MAX_STARTUP_PACKET_LENGTH. */
export const MAX_STARTUP_BYTES = 10_000;
export const SSL_REQUEST_CODE = 80877103;
export const GSSENC_REQUEST_CODE = 80877104;
export const CANCEL_REQUEST_CODE = 80877102;
/** Protocol 3.0 as the StartupMessage writes it (major << 16 | minor). */
export const PROTOCOL_3_0 = 196608;
