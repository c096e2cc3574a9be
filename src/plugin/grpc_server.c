/* grpc_server.c -- see grpc_server.h. Op sequences follow gRPC C core 1.51. */
#include "grpc_server.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* ---- arena ---- */

struct arena_block {
  struct arena_block *next;
  max_align_t data[];
};

struct vg_arena {
  struct arena_block *blocks;
};

struct vg_arena *vg_arena_new(void) {
  struct vg_arena *a = calloc(1, sizeof(*a));
  if (a == NULL) abort();
  return a;
}

void *vg_arena_alloc(struct vg_arena *a, size_t size) {
  struct arena_block *b = calloc(1, sizeof(*b) + size);
  if (b == NULL) abort();
  b->next = a->blocks;
  a->blocks = b;
  return b->data;
}

char *vg_arena_strdup(struct vg_arena *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = vg_arena_alloc(a, n);
  memcpy(d, s, n);
  return d;
}

void vg_arena_free(struct vg_arena *a) {
  if (a == NULL) return;
  while (a->blocks != NULL) {
    struct arena_block *b = a->blocks;
    a->blocks = b->next;
    free(b);
  }
  free(a);
}

/* ---- byte buffers ---- */

static grpc_byte_buffer *pack(const ProtobufCMessage *msg) {
  size_t len = protobuf_c_message_get_packed_size(msg);
  uint8_t *data = malloc(len > 0 ? len : 1);
  if (data == NULL) abort();
  protobuf_c_message_pack(msg, data);
  grpc_slice slice = grpc_slice_from_copied_buffer((const char *)data, len);
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);
  grpc_slice_unref(slice);
  free(data);
  return bb;
}

/* NULL when the buffer cannot be read or decoded. */
static ProtobufCMessage *unpack(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *bb) {
  if (bb == NULL) return NULL;
  grpc_byte_buffer_reader reader;
  if (!grpc_byte_buffer_reader_init(&reader, bb)) return NULL;
  grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
  grpc_byte_buffer_reader_destroy(&reader);
  ProtobufCMessage *msg =
      protobuf_c_message_unpack(desc, NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
  grpc_slice_unref(all);
  return msg;
}

/* ---- server ---- */

enum tag_kind { TAG_REQUEST, TAG_UNARY_DONE, TAG_STREAM_SEND, TAG_STREAM_CLOSE, TAG_SHUTDOWN };

struct tag {
  enum tag_kind kind;
};

struct request_slot {
  struct tag tag;
  size_t method;
  void *registered;
  grpc_call *call;
  gpr_timespec deadline;
  grpc_metadata_array md;
  grpc_byte_buffer *payload;
};

struct unary_call {
  struct tag tag;
  grpc_call *call;
  grpc_byte_buffer *resp;
  grpc_slice details;
  int cancelled;
};

/* A unary call waiting for a worker. */
struct job {
  size_t method;
  grpc_call *call;
  grpc_byte_buffer *payload;
  struct job *next;
};

struct stream {
  struct tag send_tag;
  struct tag close_tag;
  size_t method;
  grpc_call *call;
  grpc_byte_buffer *buf;
  bool send_inflight, want_send, closed, initial_sent;
  int cancelled;
  struct stream *next;
};

struct vg_rpc_server {
  grpc_server *server;
  grpc_completion_queue *cq;
  pthread_t thread;
  const struct vg_rpc_method *methods;
  size_t n;
  void *ctx;
  struct request_slot *slots;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct stream *streams;
  bool shutting_down, shutdown_done;
  struct tag shutdown_tag;
  /* Unary handlers run on workers; the CQ thread only queues them. */
  pthread_t *workers;
  int nworkers;
  pthread_mutex_t qlock; /* jobs, workers_stop */
  pthread_cond_t qcond;
  struct job *jobs, **jobs_tail;
  bool workers_stop;
};

/* Workers per server: one per CPU, at least 4 (handlers also wait on the
 * file system), at most 16. */
static int worker_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 4 ? 4 : n > 16 ? 16 : (int)n;
}

static void job_drop(struct job *j) {
  if (j->payload != NULL) grpc_byte_buffer_destroy(j->payload);
  grpc_call_unref(j->call); /* cancels a call not answered yet */
  free(j);
}

static void arm(struct vg_rpc_server *s, struct request_slot *slot) {
  slot->call = NULL;
  slot->payload = NULL;
  grpc_metadata_array_init(&slot->md);
  grpc_call_error e =
      grpc_server_request_registered_call(s->server, slot->registered, &slot->call, &slot->deadline,
                                          &slot->md, &slot->payload, s->cq, s->cq, &slot->tag);
  if (e != GRPC_CALL_OK) {
    grpc_metadata_array_destroy(&slot->md);
    if (!s->shutting_down)
      vg_error("cannot wait for %s calls (error %d)", s->methods[slot->method].path, (int)e);
  }
}

static void finish_unary(struct vg_rpc_server *s, grpc_call *call, grpc_status_code status,
                         const char *detail, grpc_byte_buffer *resp) {
  struct unary_call *u = calloc(1, sizeof(*u));
  if (u == NULL) abort();
  u->tag.kind = TAG_UNARY_DONE;
  u->call = call;
  u->resp = resp;
  u->details = grpc_slice_from_copied_string(detail);
  grpc_op ops[4];
  memset(ops, 0, sizeof(ops));
  size_t n = 0;
  ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  if (resp != NULL) {
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = resp;
  }
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status = status;
  ops[n++].data.send_status_from_server.status_details = &u->details;
  ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  ops[n++].data.recv_close_on_server.cancelled = &u->cancelled;
  if (grpc_call_start_batch(call, ops, n, &u->tag, NULL) != GRPC_CALL_OK) {
    vg_error("cannot answer a call");
    if (resp != NULL) grpc_byte_buffer_destroy(resp);
    grpc_slice_unref(u->details);
    grpc_call_unref(call);
    free(u);
  }
  (void)s;
}

static void unary_done(struct unary_call *u) {
  if (u->resp != NULL) grpc_byte_buffer_destroy(u->resp);
  grpc_slice_unref(u->details);
  grpc_call_unref(u->call);
  free(u);
}

/* With s->lock held. */
static void stream_kick(struct vg_rpc_server *s, struct stream *st) {
  if (st->closed || st->send_inflight || !st->want_send) return;
  st->want_send = false;
  struct vg_arena *arena = vg_arena_new();
  ProtobufCMessage *msg = s->methods[st->method].snapshot(s->ctx, arena);
  st->buf = pack(msg);
  vg_arena_free(arena);
  grpc_op ops[2];
  memset(ops, 0, sizeof(ops));
  size_t n = 0;
  if (!st->initial_sent) ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[n].op = GRPC_OP_SEND_MESSAGE;
  ops[n++].data.send_message.send_message = st->buf;
  if (grpc_call_start_batch(st->call, ops, n, &st->send_tag, NULL) != GRPC_CALL_OK) {
    grpc_byte_buffer_destroy(st->buf);
    st->buf = NULL;
    return;
  }
  st->initial_sent = true;
  st->send_inflight = true;
}

/* With s->lock held: frees st once the client is gone and no send is left. */
static void stream_maybe_free(struct vg_rpc_server *s, struct stream *st) {
  if (!st->closed || st->send_inflight) return;
  for (struct stream **p = &s->streams; *p != NULL; p = &(*p)->next) {
    if (*p == st) {
      *p = st->next;
      break;
    }
  }
  grpc_call_unref(st->call);
  free(st);
}

static void start_stream(struct vg_rpc_server *s, size_t method, grpc_call *call) {
  struct stream *st = calloc(1, sizeof(*st));
  if (st == NULL) abort();
  st->send_tag.kind = TAG_STREAM_SEND;
  st->close_tag.kind = TAG_STREAM_CLOSE;
  st->method = method;
  st->call = call;
  grpc_op op;
  memset(&op, 0, sizeof(op));
  op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  op.data.recv_close_on_server.cancelled = &st->cancelled;
  pthread_mutex_lock(&s->lock);
  if (grpc_call_start_batch(call, &op, 1, &st->close_tag, NULL) != GRPC_CALL_OK) {
    pthread_mutex_unlock(&s->lock);
    grpc_call_unref(call);
    free(st);
    return;
  }
  st->next = s->streams;
  s->streams = st;
  st->want_send = true;
  stream_kick(s, st);
  pthread_mutex_unlock(&s->lock);
}

static void handle_request(struct vg_rpc_server *s, struct request_slot *slot, bool ok) {
  if (!ok) {
    grpc_metadata_array_destroy(&slot->md);
    if (slot->payload != NULL) grpc_byte_buffer_destroy(slot->payload);
    return;
  }
  const struct vg_rpc_method *m = &s->methods[slot->method];
  grpc_call *call = slot->call;
  grpc_byte_buffer *payload = slot->payload;
  size_t method = slot->method;
  grpc_metadata_array_destroy(&slot->md);
  pthread_mutex_lock(&s->lock);
  bool rearm = !s->shutting_down;
  pthread_mutex_unlock(&s->lock);
  if (rearm) arm(s, slot);

  if (m->unary != NULL) { /* to a worker */
    struct job *j = calloc(1, sizeof(*j));
    if (j == NULL) abort();
    j->method = method;
    j->call = call;
    j->payload = payload;
    pthread_mutex_lock(&s->qlock);
    bool stopped = s->workers_stop;
    if (!stopped) {
      *s->jobs_tail = j;
      s->jobs_tail = &j->next;
      pthread_cond_signal(&s->qcond);
    }
    pthread_mutex_unlock(&s->qlock);
    if (stopped) job_drop(j);
    return;
  }
  ProtobufCMessage *req = unpack(m->request, payload);
  if (payload != NULL) grpc_byte_buffer_destroy(payload);
  if (req == NULL) {
    char detail[256];
    snprintf(detail, sizeof(detail), "%s: the request is not a valid %s message", m->path,
             m->request->name);
    finish_unary(s, call, GRPC_STATUS_INVALID_ARGUMENT, detail, NULL);
    return;
  }
  protobuf_c_message_free_unpacked(req, NULL);
  start_stream(s, method, call);
}

/* On a worker: decode, run the handler, start sending the answer. */
static void run_unary(struct vg_rpc_server *s, struct job *j) {
  const struct vg_rpc_method *m = &s->methods[j->method];
  grpc_call *call = j->call;
  ProtobufCMessage *req = unpack(m->request, j->payload);
  if (j->payload != NULL) grpc_byte_buffer_destroy(j->payload);
  free(j);
  if (req == NULL) {
    char detail[256];
    snprintf(detail, sizeof(detail), "%s: the request is not a valid %s message", m->path,
             m->request->name);
    finish_unary(s, call, GRPC_STATUS_INVALID_ARGUMENT, detail, NULL);
    return;
  }
  struct vg_arena *arena = vg_arena_new();
  ProtobufCMessage *resp = NULL;
  char detail[512] = "";
  grpc_status_code st = m->unary(s->ctx, req, arena, &resp, detail, sizeof(detail));
  protobuf_c_message_free_unpacked(req, NULL);
  grpc_byte_buffer *bb = (st == GRPC_STATUS_OK && resp != NULL) ? pack(resp) : NULL;
  vg_arena_free(arena);
  if (st == GRPC_STATUS_OK && bb == NULL) {
    st = GRPC_STATUS_INTERNAL;
    snprintf(detail, sizeof(detail), "%s: no response", m->path);
  }
  finish_unary(s, call, st, detail, bb);
}

static void *worker_thread(void *arg) {
  struct vg_rpc_server *s = arg;
  pthread_mutex_lock(&s->qlock);
  for (;;) {
    while (!s->workers_stop && s->jobs == NULL) pthread_cond_wait(&s->qcond, &s->qlock);
    if (s->workers_stop) break; /* what is left is dropped by vg_rpc_server_stop */
    struct job *j = s->jobs;
    s->jobs = j->next;
    if (s->jobs == NULL) s->jobs_tail = &s->jobs;
    pthread_mutex_unlock(&s->qlock);
    run_unary(s, j);
    pthread_mutex_lock(&s->qlock);
  }
  pthread_mutex_unlock(&s->qlock);
  return NULL;
}

static void *cq_thread(void *arg) {
  struct vg_rpc_server *s = arg;
  for (;;) {
    grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
    if (ev.type != GRPC_OP_COMPLETE) continue;
    struct tag *t = ev.tag;
    switch (t->kind) {
      case TAG_REQUEST:
        handle_request(s, (struct request_slot *)t, ev.success != 0);
        break;
      case TAG_UNARY_DONE:
        unary_done((struct unary_call *)t);
        break;
      case TAG_STREAM_SEND: {
        struct stream *st = (struct stream *)((char *)t - offsetof(struct stream, send_tag));
        pthread_mutex_lock(&s->lock);
        grpc_byte_buffer_destroy(st->buf);
        st->buf = NULL;
        st->send_inflight = false;
        if (!ev.success) st->want_send = false;
        stream_kick(s, st);
        stream_maybe_free(s, st);
        pthread_mutex_unlock(&s->lock);
        break;
      }
      case TAG_STREAM_CLOSE: {
        struct stream *st = (struct stream *)((char *)t - offsetof(struct stream, close_tag));
        pthread_mutex_lock(&s->lock);
        st->closed = true;
        stream_maybe_free(s, st);
        pthread_mutex_unlock(&s->lock);
        break;
      }
      case TAG_SHUTDOWN:
        pthread_mutex_lock(&s->lock);
        s->shutdown_done = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        break;
    }
  }
  return NULL;
}

struct vg_rpc_server *vg_rpc_server_start(const char *socket_path,
                                          const struct vg_rpc_method *methods, size_t n,
                                          void *ctx) {
  grpc_init();
  struct vg_rpc_server *s = calloc(1, sizeof(*s));
  if (s == NULL) abort();
  s->methods = methods;
  s->n = n;
  s->ctx = ctx;
  s->shutdown_tag.kind = TAG_SHUTDOWN;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  pthread_mutex_init(&s->qlock, NULL);
  pthread_cond_init(&s->qcond, NULL);
  s->jobs_tail = &s->jobs;
  s->slots = calloc(n, sizeof(*s->slots));
  if (s->slots == NULL) abort();
  s->cq = grpc_completion_queue_create_for_next(NULL);
  s->server = grpc_server_create(NULL, NULL);
  grpc_server_register_completion_queue(s->server, s->cq, NULL);
  for (size_t i = 0; i < n; i++) {
    s->slots[i].tag.kind = TAG_REQUEST;
    s->slots[i].method = i;
    s->slots[i].registered = grpc_server_register_method(
        s->server, methods[i].path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  }
  char target[4200];
  snprintf(target, sizeof(target), "unix:%s", socket_path);
  grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
  int port = grpc_server_add_http2_port(s->server, target, creds);
  grpc_server_credentials_release(creds);
  if (port == 0) {
    vg_error("cannot listen on %s", target);
    grpc_server_destroy(s->server);
    grpc_completion_queue_shutdown(s->cq);
    while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(s->cq);
    free(s->slots);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->qlock);
    pthread_cond_destroy(&s->qcond);
    free(s);
    grpc_shutdown();
    return NULL;
  }
  grpc_server_start(s->server);
  s->nworkers = worker_count();
  s->workers = calloc((size_t)s->nworkers, sizeof(*s->workers));
  if (s->workers == NULL) abort();
  for (int i = 0; i < s->nworkers; i++)
    if (pthread_create(&s->workers[i], NULL, worker_thread, s) != 0) abort();
  for (size_t i = 0; i < n; i++) arm(s, &s->slots[i]);
  if (pthread_create(&s->thread, NULL, cq_thread, s) != 0) abort();
  return s;
}

void vg_rpc_server_notify(struct vg_rpc_server *s) {
  pthread_mutex_lock(&s->lock);
  for (struct stream *st = s->streams; st != NULL; st = st->next) {
    st->want_send = true;
    stream_kick(s, st);
  }
  pthread_mutex_unlock(&s->lock);
}

int vg_rpc_server_streams(struct vg_rpc_server *s) {
  int n = 0;
  pthread_mutex_lock(&s->lock);
  for (struct stream *st = s->streams; st != NULL; st = st->next)
    if (!st->closed) n++;
  pthread_mutex_unlock(&s->lock);
  return n;
}

void vg_rpc_server_stop(struct vg_rpc_server *s) {
  if (s == NULL) return;
  pthread_mutex_lock(&s->lock);
  s->shutting_down = true;
  pthread_mutex_unlock(&s->lock);
  grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
  grpc_server_cancel_all_calls(s->server);
  /* No handler runs once the workers are joined; calls still queued are
   * cancelled (their answers would go to a client that is being cut off). */
  pthread_mutex_lock(&s->qlock);
  s->workers_stop = true;
  pthread_cond_broadcast(&s->qcond);
  pthread_mutex_unlock(&s->qlock);
  for (int i = 0; i < s->nworkers; i++) pthread_join(s->workers[i], NULL);
  while (s->jobs != NULL) {
    struct job *j = s->jobs;
    s->jobs = j->next;
    job_drop(j);
  }
  s->jobs_tail = &s->jobs;
  pthread_mutex_lock(&s->lock);
  while (!s->shutdown_done) pthread_cond_wait(&s->cond, &s->lock);
  pthread_mutex_unlock(&s->lock);
  grpc_server_destroy(s->server);
  grpc_completion_queue_shutdown(s->cq);
  pthread_join(s->thread, NULL);
  grpc_completion_queue_destroy(s->cq);
  while (s->streams != NULL) {
    struct stream *st = s->streams;
    s->streams = st->next;
    if (st->buf != NULL) grpc_byte_buffer_destroy(st->buf);
    grpc_call_unref(st->call);
    free(st);
  }
  free(s->slots);
  free(s->workers);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->qlock);
  pthread_cond_destroy(&s->qcond);
  free(s);
  grpc_shutdown();
}

/* ---- client ---- */

grpc_status_code vg_rpc_call(const char *target, const char *path, const ProtobufCMessage *req,
                             const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                             int timeout_ms, char *detail, size_t detail_len) {
  grpc_init();
  if (resp != NULL) *resp = NULL;
  grpc_channel_credentials *creds = grpc_insecure_credentials_create();
  grpc_channel *ch = grpc_channel_create(target, creds, NULL);
  grpc_channel_credentials_release(creds);
  grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
  gpr_timespec deadline =
      gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
  grpc_slice method = grpc_slice_from_static_string(path);
  grpc_call *call =
      grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL, deadline, NULL);
  grpc_byte_buffer *out = pack(req), *in = NULL;
  grpc_metadata_array initial, trailing;
  grpc_metadata_array_init(&initial);
  grpc_metadata_array_init(&trailing);
  grpc_status_code status = GRPC_STATUS_UNKNOWN;
  grpc_slice details = grpc_empty_slice();
  grpc_op ops[6];
  memset(ops, 0, sizeof(ops));
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[1].op = GRPC_OP_SEND_MESSAGE;
  ops[1].data.send_message.send_message = out;
  ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
  ops[4].op = GRPC_OP_RECV_MESSAGE;
  ops[4].data.recv_message.recv_message = &in;
  ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
  ops[5].data.recv_status_on_client.status = &status;
  ops[5].data.recv_status_on_client.status_details = &details;
  static int tag;
  if (grpc_call_start_batch(call, ops, 6, &tag, NULL) == GRPC_CALL_OK) {
    grpc_completion_queue_pluck(cq, &tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  } else {
    snprintf(detail, detail_len, "cannot start the call");
  }
  if (status != GRPC_STATUS_OK) {
    snprintf(detail, detail_len, "%.*s", (int)GRPC_SLICE_LENGTH(details),
             (const char *)GRPC_SLICE_START_PTR(details));
  } else if (resp != NULL && resp_desc != NULL) {
    *resp = unpack(resp_desc, in);
    if (*resp == NULL) {
      status = GRPC_STATUS_INTERNAL;
      snprintf(detail, detail_len, "%s: cannot decode the reply", path);
    }
  }
  if (in != NULL) grpc_byte_buffer_destroy(in);
  grpc_byte_buffer_destroy(out);
  grpc_slice_unref(details);
  grpc_metadata_array_destroy(&initial);
  grpc_metadata_array_destroy(&trailing);
  grpc_call_unref(call);
  grpc_channel_destroy(ch);
  grpc_completion_queue_shutdown(cq);
  while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
         GRPC_QUEUE_SHUTDOWN) {
  }
  grpc_completion_queue_destroy(cq);
  grpc_shutdown();
  return status;
}
