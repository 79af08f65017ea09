/** The CLI's usage error (exit 2): a wrong flag, value or argument; nothing ran. */

export const USAGE_EXIT = 2;

export class UsageError extends Error {}

/**
 * `membrane serve` could not bind its address (in use, not permitted, not available on this host).
 * Not an error-table code: no sandbox error happened, the host refused the address.
 */
export const BIND_FAILED_EXIT = 3;
