/**
 * This process as a runner of the cluster: `@effect/cluster` over sockets between the
 * runners, its shard locks, runners and messages in the store's PostgreSQL database.
 * Other runners reach this one at `host:port`; the protocol between runners carries no
 * credentials of its own, so that address must be one only the cluster's machines reach
 * (127.0.0.1 for runners on one machine, the default).
 *
 * A runner that dies keeps its shards locked for `leaseMs`; then another takes them,
 * and its threads start there at their next message (ClusterThreads.ts).
 */
import type { Sharding } from "@effect/cluster/Sharding"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import type { SqlClient } from "@effect/sql/SqlClient"
import { Duration, Layer, Option } from "effect"

export interface ClusterOptions {
  /** The address other runners reach this one at. */
  readonly host: string
  readonly port: number
  /** How long a dead runner's shards stay locked before another runner takes them (ms; default 35,000). */
  readonly leaseMs?: number | undefined
}

export const DEFAULT_LEASE_MS = 35_000

export const layer = (options: ClusterOptions): Layer.Layer<Sharding, unknown, SqlClient> => {
  const lease = options.leaseMs ?? DEFAULT_LEASE_MS
  return NodeClusterSocket.layer({
    storage: "sql",
    shardingConfig: {
      runnerAddress: Option.some(RunnerAddress.make(options.host, options.port)),
      shardLockExpiration: Duration.millis(lease),
      // Refreshed well within the lease, and looked for as often: a dead runner's shards move soon after it.
      shardLockRefreshInterval: Duration.millis(Math.max(250, Math.floor(lease / 4))),
      refreshAssignmentsInterval: Duration.millis(Math.max(250, Math.min(3_000, Math.floor(lease / 4)))),
      entityMessagePollInterval: Duration.millis(Math.max(250, Math.min(10_000, Math.floor(lease / 4)))),
      runnerHealthCheckInterval: Duration.millis(Math.max(1_000, Math.min(60_000, lease))),
      // A message to an entity on this runner is handed over as it is, not serialised to pretend it travelled.
      simulateRemoteSerialization: false
    }
  }) as unknown as Layer.Layer<Sharding, unknown, SqlClient>
}
