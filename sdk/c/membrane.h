/*
 * membrane.h — the guest side of Membrane's `membrane` import module, for C programs built with
 * clang for wasm32-wasip1 (`engine.build`, or any clang `--target=wasm32-wasi`). docs/abi.md is the contract; this header declares the imports
 * Membrane links today and builds/parses the run_command request and response layouts.
 *
 * Every import is linked only when its capability is granted: a program that calls one it was
 * not granted fails to link (LINK_UNSATISFIED) before any of its code runs.
 *
 * Byte results follow one convention: the guest passes (out, out_cap); the return value n means
 *   0 <= n <= out_cap   n bytes were written;
 *   n >  out_cap        nothing was written, call again with a buffer of n bytes (the answer is
 *                       kept: the same request is not run twice);
 *   n <  0              a MB_E* error code.
 */
#ifndef MEMBRANE_H
#define MEMBRANE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MB_IMPORT(name) __attribute__((import_module("membrane"), import_name(#name)))

/* Guest error codes (DESIGN §4). */
#define MB_EDENIED       (-1) /* policy said no */
#define MB_ERATE_LIMITED (-2) /* per-principal rate limit */
#define MB_EREVOKED      (-3) /* principal revoked */
#define MB_ETOO_LARGE    (-4) /* a size cap */
#define MB_ENOT_FOUND    (-5) /* no such file, command, key */
#define MB_EINVAL        (-6) /* malformed request */
#define MB_ETIMEOUT      (-7) /* broker deadline */
#define MB_EUNAVAILABLE  (-8) /* upstream failure */
#define MB_EQUOTA        (-9) /* depth, concurrency, live processes, space */

/* Ambient: always linked. */
MB_IMPORT(session_info) int32_t mb_session_info(uint8_t *out, uint32_t out_cap);
MB_IMPORT(log) void mb_log(int32_t level, const char *msg, uint32_t msg_len);
MB_IMPORT(clock_ms) int64_t mb_clock_ms(void);

/* `vfs`: the instance's own VFS. Paths are guest paths ("/notes.txt", "/tmp/x"). */
MB_IMPORT(vfs_read) int32_t mb_vfs_read(const char *path, uint32_t path_len, uint8_t *out, uint32_t out_cap);
MB_IMPORT(vfs_write) int32_t mb_vfs_write(const char *path, uint32_t path_len, const uint8_t *data, uint32_t data_len);
/* JSON array of {"path","type","size"} for every entry whose path starts with the prefix. */
MB_IMPORT(vfs_list) int32_t mb_vfs_list(const char *prefix, uint32_t prefix_len, uint8_t *out, uint32_t out_cap);
MB_IMPORT(vfs_delete) int32_t mb_vfs_delete(const char *path, uint32_t path_len);
/* One read-only SELECT against the VFS's own tables → JSON {"columns":[...],"rows":[[...]]}. */
MB_IMPORT(vfs_query) int32_t mb_vfs_query(const char *sql, uint32_t sql_len, uint8_t *out, uint32_t out_cap);

/* `kv`: durable per-tenant key-value data (key 1..1024 bytes, value <= 1 MiB, <= 10 000 keys). */
MB_IMPORT(kv_get) int32_t mb_kv_get(const char *key, uint32_t key_len, uint8_t *out, uint32_t out_cap);
MB_IMPORT(kv_put) int32_t mb_kv_put(const char *key, uint32_t key_len, const uint8_t *value, uint32_t value_len);
MB_IMPORT(kv_delete) int32_t mb_kv_delete(const char *key, uint32_t key_len);
/* JSON array of the keys starting with the prefix (at most 1000, in order). */
MB_IMPORT(kv_list) int32_t mb_kv_list(const char *prefix, uint32_t prefix_len, uint8_t *out, uint32_t out_cap);

/* `queue`: per-tenant FIFO queues (message <= 256 KiB, depth <= 1000). pop is non-blocking:
 * MB_ENOT_FOUND when empty; a message larger than out_cap stays queued (its size is returned). */
MB_IMPORT(queue_push) int32_t mb_queue_push(const char *queue, uint32_t queue_len, const uint8_t *msg, uint32_t msg_len);
MB_IMPORT(queue_pop) int32_t mb_queue_pop(const char *queue, uint32_t queue_len, uint8_t *out, uint32_t out_cap);
MB_IMPORT(queue_len) int32_t mb_queue_len(const char *queue, uint32_t queue_len);

/* `secrets`: HMAC-SHA256 of a message under a named operator secret (32 bytes). There is no
 * way to read a secret. */
MB_IMPORT(secret_sign) int32_t mb_secret_sign(const char *name, uint32_t name_len, const uint8_t *msg, uint32_t msg_len, uint8_t *out, uint32_t out_cap);

/* `net`: HTTP(S) through the host's guard (public addresses only, pinned IP, redirects re-checked,
 * body <= 1 MiB, 10 s). Request JSON {"url","method"?,"headers"?,"body"? | "bodyBase64"?};
 * response JSON {"status","headers","body"} ("bodyBase64" when the body is not UTF-8).
 * A refused destination is MB_EDENIED. A response larger than out_cap is kept for the retry. */
MB_IMPORT(http_fetch) int32_t mb_http_fetch(const char *request_json, uint32_t request_len, uint8_t *out, uint32_t out_cap);
/* A JSON array of up to 64 requests (16 at once, 15 s each) -> a JSON array of responses or
 * {"error","errno"} per request, in order. */
MB_IMPORT(http_fetch_many) int32_t mb_http_fetch_many(const char *requests_json, uint32_t requests_len, uint8_t *out, uint32_t out_cap);
/* `browse`: a page's readable text (title, URL, status, then the text), through the same guard. */
MB_IMPORT(browse_fetch) int32_t mb_browse_fetch(const char *url, uint32_t url_len, uint8_t *out, uint32_t out_cap);
/* `tcp` / `udp` / `tls`: one request, one response (<= 1 MiB, 10 s) to "host:port", same guard and
 * pin; TLS verifies the peer with SNI = host. */
MB_IMPORT(tcp_request) int32_t mb_tcp_request(const char *target, uint32_t target_len, const uint8_t *data, uint32_t data_len, uint8_t *out, uint32_t out_cap);
MB_IMPORT(udp_request) int32_t mb_udp_request(const char *target, uint32_t target_len, const uint8_t *data, uint32_t data_len, uint8_t *out, uint32_t out_cap);
MB_IMPORT(tls_request) int32_t mb_tls_request(const char *target, uint32_t target_len, const uint8_t *data, uint32_t data_len, uint8_t *out, uint32_t out_cap);

/* `net`, serving: a guest that exports `int serve_handle(int request_len)` answers inbound HTTP
 * when the operator serves it (engine.serve). serve_request copies the current request JSON
 * {"method","path","query","headers","body"|"bodyBase64","client"}; serve_respond sets the answer
 * JSON {"status","headers"?,"body"? | "bodyBase64"?} (<= 1 MiB). */
MB_IMPORT(serve_request) int32_t mb_serve_request(uint8_t *out, uint32_t out_cap);
MB_IMPORT(serve_respond) int32_t mb_serve_respond(const uint8_t *response_json, uint32_t response_len);

/* `llm`: one chat completion from the operator's OpenAI-compatible endpoint (the host holds the
 * key). Request JSON {"messages":[...], "model"?, "max_tokens"?, "temperature"?, "top_p"?, "stop"?};
 * the answer is the endpoint's JSON (<= 1 MiB). */
MB_IMPORT(llm_complete) int32_t mb_llm_complete(const char *request_json, uint32_t request_len, uint8_t *out, uint32_t out_cap);

/* `commands`: run a registered command; request/response layouts below. */
MB_IMPORT(run_command) int32_t mb_run_command(const uint8_t *req, uint32_t req_len, uint8_t *out, uint32_t out_cap);
/* `exec`: the same, counted and logged (depth <= 8, <= 64 concurrent per principal). */
MB_IMPORT(exec) int32_t mb_exec(const uint8_t *req, uint32_t req_len, uint8_t *out, uint32_t out_cap);
/* `exec`: background processes (<= 32 live per principal); spawn returns a pid >= 1. */
MB_IMPORT(process_spawn) int32_t mb_process_spawn(const uint8_t *req, uint32_t req_len);
MB_IMPORT(process_wait) int32_t mb_process_wait(int32_t pid, uint8_t *out, uint32_t out_cap);
MB_IMPORT(process_kill) int32_t mb_process_kill(int32_t pid);

/* `parallel`: one command over many inputs (each the stdin of one task) on the worker pool.
 * Request: like run_command's without stdin, then u32 timeout_ms (0 = the caller's) · u32 count ·
 * count × (u32 len · input). Response: u8 1 · u8 0 · u16 0 · u32 count · count × (u32 len ·
 * run_command response). mb_many_request_build writes the request. */
MB_IMPORT(run_command_many) int32_t mb_run_command_many(const uint8_t *req, uint32_t req_len, uint8_t *out, uint32_t out_cap);

/*
 * Request: u8 version=1 · u8 flags=0 · u16 argc · argc × (u32 len · bytes) · u32 len · stdin.
 * argv[0] is the command's registered name. Returns the request's size; if it exceeds `cap`,
 * nothing useful was written — call again with a buffer of that size.
 */
static inline uint32_t mb_request_size(int argc, const char *const *argv, uint32_t stdin_len) {
  uint32_t n = 4;
  for (int i = 0; i < argc; i++) n += 4 + (uint32_t)strlen(argv[i]);
  return n + 4 + stdin_len;
}

static inline void mb__put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t mb__get32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* The shared head of both request layouts: version, flags, argc, then each argument. */
static inline uint32_t mb__put_argv(uint8_t *buf, int argc, const char *const *argv) {
  buf[0] = 1; buf[1] = 0; buf[2] = (uint8_t)argc; buf[3] = (uint8_t)(argc >> 8);
  uint32_t at = 4;
  for (int i = 0; i < argc; i++) {
    uint32_t len = (uint32_t)strlen(argv[i]);
    mb__put32(buf + at, len);
    memcpy(buf + at + 4, argv[i], len);
    at += 4 + len;
  }
  return at;
}

static inline uint32_t mb_request_build(uint8_t *buf, uint32_t cap, int argc, const char *const *argv,
                                        const uint8_t *stdin_data, uint32_t stdin_len) {
  uint32_t need = mb_request_size(argc, argv, stdin_len);
  if (need > cap || argc <= 0 || argc > 0xffff) return need;
  uint32_t at = mb__put_argv(buf, argc, argv);
  mb__put32(buf + at, stdin_len);
  if (stdin_len) memcpy(buf + at + 4, stdin_data, stdin_len);
  return need;
}

/* Returns the request's size; nothing useful is written when it exceeds `cap`. */
static inline uint32_t mb_many_request_build(uint8_t *buf, uint32_t cap, int argc, const char *const *argv, uint32_t timeout_ms,
                                             int count, const uint8_t *const *inputs, const uint32_t *input_lens) {
  uint32_t need = 4 + 8;
  for (int i = 0; i < argc; i++) need += 4 + (uint32_t)strlen(argv[i]);
  for (int i = 0; i < count; i++) need += 4 + input_lens[i];
  if (need > cap || argc <= 0 || argc > 0xffff) return need;
  uint32_t at = mb__put_argv(buf, argc, argv);
  mb__put32(buf + at, timeout_ms);
  mb__put32(buf + at + 4, (uint32_t)count);
  at += 8;
  for (int i = 0; i < count; i++) {
    mb__put32(buf + at, input_lens[i]);
    if (input_lens[i]) memcpy(buf + at + 4, inputs[i], input_lens[i]);
    at += 4 + input_lens[i];
  }
  return need;
}

/*
 * Response: u8 version=1 · u8 flags (1 stdout truncated, 2 stderr truncated) · u16 0 ·
 * i32 status · u32 len · error code · u32 len · stdout · u32 len · stderr.
 * `status` is the exit status; -1 with `error` set (e.g. "FUEL_EXHAUSTED") for an abnormal end.
 * The parsed pointers point into the buffer.
 */
typedef struct {
  int32_t status;
  uint32_t flags;
  const char *error; uint32_t error_len;
  const uint8_t *out; uint32_t out_len;
  const uint8_t *err; uint32_t err_len;
} mb_response;

/* 0 on success, MB_EINVAL if the bytes are not a response. */
static inline int mb_response_parse(const uint8_t *buf, uint32_t len, mb_response *r) {
  if (len < 20 || buf[0] != 1) return MB_EINVAL;
  r->flags = buf[1];
  r->status = (int32_t)mb__get32(buf + 4);
  uint32_t at = 8;
  const uint8_t *parts[3];
  uint32_t lens[3];
  for (int i = 0; i < 3; i++) {
    if (at + 4 > len) return MB_EINVAL;
    lens[i] = mb__get32(buf + at);
    if (lens[i] > len - at - 4) return MB_EINVAL;
    parts[i] = buf + at + 4;
    at += 4 + lens[i];
  }
  r->error = (const char *)parts[0]; r->error_len = lens[0];
  r->out = parts[1]; r->out_len = lens[1];
  r->err = parts[2]; r->err_len = lens[2];
  return 0;
}

/* The i-th task's response inside a run_command_many answer: 0, or MB_EINVAL. */
static inline int mb_many_response_at(const uint8_t *buf, uint32_t len, uint32_t index, mb_response *r) {
  if (len < 8 || buf[0] != 1) return MB_EINVAL;
  uint32_t count = mb__get32(buf + 4), at = 8;
  if (index >= count) return MB_EINVAL;
  for (uint32_t i = 0; i <= index; i++) {
    if (at + 4 > len) return MB_EINVAL;
    uint32_t n = mb__get32(buf + at);
    if (n > len - at - 4) return MB_EINVAL;
    if (i == index) return mb_response_parse(buf + at + 4, n, r);
    at += 4 + n;
  }
  return MB_EINVAL;
}

#endif /* MEMBRANE_H */
