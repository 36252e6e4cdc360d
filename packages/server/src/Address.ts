/**
 * Where a daemon listens unless told otherwise. Kept apart from the server so that the
 * client half of the CLI can name the default url without loading the server.
 */
export const DEFAULT_HOST = "127.0.0.1"
export const DEFAULT_PORT = 7878
export const DEFAULT_RPC_PATH = "/rpc"

/** Where the daemon serves its inspector page. */
export const INSPECT_PATH = "/inspect"
