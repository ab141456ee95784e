/**
 * What a Redis failure says in the log. The gateway talks to one Redis server at `redis.url` (ioredis's
 * single-node client, lib/redis/connection.ts); it does not speak the Redis Cluster protocol. A cluster node
 * answers a key whose slot another node owns with a `MOVED` (or `ASK`) redirection, and every key with
 * `CLUSTERDOWN` while the cluster is not serving, which that client passes on as a failed call: the log then
 * says plainly that the setup is not supported, rather than only naming a slot and an address.
 *
 * Free of ioredis, so what logs a failure need not load it.
 *
 * @module
 */

/** The replies only a Redis Cluster node gives. */
const CLUSTER_REPLY = /^(?:MOVED|ASK|CLUSTERDOWN)\b/;

/** What the log adds to a cluster node's reply. */
export const CLUSTER_NOT_SUPPORTED =
  "redis.url names a Redis Cluster node; Redis Cluster is not supported: " +
  "use a single primary (or Sentinel or managed failover behind one address)";

/** A failed Redis call's message for the log, saying so when the server is a Redis Cluster node. */
export function redisErrorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return CLUSTER_REPLY.test(text) ? `${text} (${CLUSTER_NOT_SUPPORTED})` : text;
}
