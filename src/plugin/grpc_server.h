/*
 * grpc_server.h -- a small gRPC C-core server for protobuf-c messages.
 *
 * Serves registered methods on a unix socket. One thread drains the server's
 * completion queue, so calls are answered even while another thread of the
 * program blocks in a client call (the kubelet calls GetDevicePluginOptions
 * back from inside our Register). That thread only dispatches: unary calls go
 * to a pool of worker threads (one per CPU, 4 to 16), so several run at once
 * and handlers must be thread-safe. Unary handlers get the unpacked request
 * and build the response from an arena that the server frees once it is sent.
 * Server-streaming methods send a snapshot when the call starts and again
 * after every vg_rpc_server_notify(), until the client goes away; a stream
 * has at most one send in flight (later notifications fold into one more
 * snapshot) and snapshots are taken under the server's lock.
 */
#ifndef VG_GRPC_SERVER_H
#define VG_GRPC_SERVER_H

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>

/* Memory for one response; everything is freed at once. */
struct vg_arena;
void *vg_arena_alloc(struct vg_arena *a, size_t size); /* zeroed */
char *vg_arena_strdup(struct vg_arena *a, const char *s);
struct vg_arena *vg_arena_new(void);
void vg_arena_free(struct vg_arena *a);

/* Unary handler: GRPC_STATUS_OK with *resp set, or an error status with a
 * message in detail. */
typedef grpc_status_code (*vg_rpc_unary_fn)(void *ctx, const ProtobufCMessage *req,
                                            struct vg_arena *arena, ProtobufCMessage **resp,
                                            char *detail, size_t detail_len);
/* Streaming snapshot: the message to send now (from arena). */
typedef ProtobufCMessage *(*vg_rpc_snapshot_fn)(void *ctx, struct vg_arena *arena);

struct vg_rpc_method {
  const char *path; /* "/package.Service/Method" */
  const ProtobufCMessageDescriptor *request;
  vg_rpc_unary_fn unary;       /* unary methods */
  vg_rpc_snapshot_fn snapshot; /* server-streaming methods */
};

struct vg_rpc_server;

/* Starts serving methods[0..n) on "unix:<socket_path>" with ctx passed to
 * the handlers. NULL on failure (message on stderr). */
struct vg_rpc_server *vg_rpc_server_start(const char *socket_path,
                                          const struct vg_rpc_method *methods, size_t n, void *ctx);
/* Every open stream sends a fresh snapshot. Any thread. */
void vg_rpc_server_notify(struct vg_rpc_server *s);
/* Number of open streams (for logs and tests). */
int vg_rpc_server_streams(struct vg_rpc_server *s);
/* Cancels all calls, waits for running handlers (calls still queued are
 * cancelled without running), stops, frees. */
void vg_rpc_server_stop(struct vg_rpc_server *s);

/* One unary client call on a fresh channel to target ("unix:/path"): packs
 * req, waits up to timeout_ms, unpacks the reply with resp_desc into *resp
 * (free with protobuf_c_message_free_unpacked; may be NULL). Returns the
 * status; on error, detail holds the server's message or the transport's. */
grpc_status_code vg_rpc_call(const char *target, const char *path, const ProtobufCMessage *req,
                             const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                             int timeout_ms, char *detail, size_t detail_len);

#endif
