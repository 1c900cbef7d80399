/*
 * rados_ops_bench: the librados baseline of `msgr rados opbench` (see
 * scripts/bench/rados-ops-vs-librados.sh, which builds and runs it).
 *
 *   rados_ops_bench -c CONF -p POOL [-n COUNT] [-t IN_FLIGHT] MODE
 *
 * MODE:
 *   notify          one watch (rados_watch3; its callback acknowledges each
 *                   notify with rados_notify_ack and a 4-byte payload) and
 *                   COUNT sequential rados_notify2 calls on the same object
 *                   from the same client: each a round trip notifier ->
 *                   OSD -> watcher -> OSD -> notifier;
 *   compound-write  COUNT write ops on COUNT objects, each one
 *                   rados_write_op_t: create (not exclusive) + setxattr
 *                   (16 bytes) + write 4 KiB at 0 + omap_set one key (16
 *                   bytes), IN_FLIGHT (1) at a time (aio past 1);
 *   compound-read   the same COUNT objects written first (not measured),
 *                   then COUNT read ops, each one rados_read_op_t: stat +
 *                   read 4 KiB + getxattrs + omap_get_vals_by_keys (one
 *                   key). The C API has no single-xattr read op, so both
 *                   sides read the object's xattrs (one, 16 bytes).
 *
 * The objects are removed after (not measured). Prints one line:
 *   tool=librados mode=M ops=N in_flight=Q secs=S ops_per_s=R
 *   median_us=L p99_us=P cpu_us_per_op=C
 * latency per op from its submission to its completion (the completion
 * callback's time), CPU the process's user + system time (getrusage)
 * over the measured phase divided by the ops. `msgr rados opbench`
 * prints the same line with tool=msgr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define OP_SIZE 4096

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu_s(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec +
         r.ru_stime.tv_usec * 1e-6;
}

static void die(const char *what, int r) {
  fprintf(stderr, "rados_ops_bench: %s: %s (%d)\n", what, strerror(-r), r);
  exit(1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The p-th percentile (0..100) of sorted `v`, as msgr's Latencies takes it
 * (the nearest rank, rounded). */
static double percentile(const double *v, long n, double p) {
  long i = (long)(p / 100.0 * (n - 1) + 0.5);
  if (i >= n) i = n - 1;
  return v[i];
}

static void report(const char *mode, long n, int q, double secs, double cpu,
                   double *lat) {
  qsort(lat, n, sizeof *lat, cmp_double);
  printf("tool=librados mode=%s ops=%ld in_flight=%d secs=%.3f ops_per_s=%.1f "
         "median_us=%.0f p99_us=%.0f cpu_us_per_op=%.2f\n",
         mode, n, q, secs, n / secs, percentile(lat, n, 50) * 1e6,
         percentile(lat, n, 99) * 1e6, cpu * 1e6 / n);
}

/* --- watch/notify --- */

struct watcher {
  rados_ioctx_t io;
  const char *oid;
  long acked;
};

static void on_notify(void *arg, uint64_t notify_id, uint64_t cookie,
                      uint64_t notifier, void *data, size_t len) {
  struct watcher *w = arg;
  (void)notifier;
  (void)data;
  (void)len;
  int r = rados_notify_ack(w->io, w->oid, notify_id, cookie, "pong", 4);
  if (r < 0) die("rados_notify_ack", r);
  __atomic_add_fetch(&w->acked, 1, __ATOMIC_RELAXED);
}

static void on_watch_error(void *arg, uint64_t cookie, int err) {
  (void)arg;
  fprintf(stderr, "rados_ops_bench: watch %llu error %d\n",
          (unsigned long long)cookie, err);
}

static void bench_notify(rados_ioctx_t io, const char *prefix, long n) {
  char oid[256];
  snprintf(oid, sizeof oid, "%s_notify", prefix);
  int r = rados_write_full(io, oid, "", 0);
  if (r < 0) die("create the notify object", r);
  struct watcher w = {io, oid, 0};
  uint64_t cookie;
  r = rados_watch3(io, oid, &cookie, on_notify, on_watch_error, 0, &w);
  if (r < 0) die("rados_watch3", r);
  double *lat = calloc(n, sizeof *lat);
  double t0 = now_s(), c0 = cpu_s();
  for (long i = 0; i < n; i++) {
    char *reply = NULL;
    size_t reply_len = 0;
    double at = now_s();
    r = rados_notify2(io, oid, "ping", 4, 10000, &reply, &reply_len);
    lat[i] = now_s() - at;
    if (r < 0) die("rados_notify2", r);
    /* one ack: its gid, cookie, 4-byte length and payload after the
     * counts; an empty reply would mean nobody acknowledged */
    if (reply_len < 4 + 8 + 8 + 4 + 4) die("notify reply without the ack", -EIO);
    rados_buffer_free(reply);
  }
  double secs = now_s() - t0, cpu = cpu_s() - c0;
  rados_unwatch2(io, cookie);
  rados_remove(io, oid);
  if (w.acked < n) die("fewer acks than notifies", -EIO);
  report("notify", n, 1, secs, cpu, lat);
  free(lat);
}

/* --- compound ops --- */

static char data[OP_SIZE];
static const char *omap_key = "bench_key";
static const char xattr_val[16] = "0123456789abcdef";

struct slot {
  int index;
  rados_completion_t c;
  rados_write_op_t w;
  rados_read_op_t rd;
  double start, end;
  char buf[OP_SIZE];
  size_t got;
  int rv_read, rv_stat, rv_xattrs, rv_omap;
  uint64_t size;
  time_t mtime;
  rados_xattrs_iter_t xattrs;
  rados_omap_iter_t omap;
};

/* The slots whose op completed, in the order they did: the completion
 * callback (a librados thread) takes the time and queues its slot; the
 * main thread takes them one by one, as a JoinSet's join_next does. */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int *done_ring;
static long done_head, done_tail;
static int ring_len;

static void on_complete(rados_completion_t c, void *arg) {
  struct slot *s = arg;
  (void)c;
  double end = now_s();
  pthread_mutex_lock(&done_lock);
  s->end = end;
  done_ring[done_tail++ % ring_len] = s->index;
  pthread_cond_signal(&done_cond);
  pthread_mutex_unlock(&done_lock);
}

static struct slot *next_done(struct slot *slots) {
  pthread_mutex_lock(&done_lock);
  while (done_head == done_tail) pthread_cond_wait(&done_cond, &done_lock);
  struct slot *s = &slots[done_ring[done_head++ % ring_len]];
  pthread_mutex_unlock(&done_lock);
  return s;
}

static void oid_of(char *oid, size_t len, const char *prefix, long i) {
  snprintf(oid, len, "%s_obj%ld", prefix, i);
}

static rados_write_op_t make_write(void) {
  rados_write_op_t w = rados_create_write_op();
  const char *keys[1] = {omap_key};
  const char *vals[1] = {xattr_val};
  size_t lens[1] = {sizeof xattr_val};
  rados_write_op_create(w, LIBRADOS_CREATE_IDEMPOTENT, NULL);
  rados_write_op_setxattr(w, "bench", xattr_val, sizeof xattr_val);
  rados_write_op_write(w, data, OP_SIZE, 0);
  rados_write_op_omap_set(w, keys, vals, lens, 1);
  return w;
}

static rados_read_op_t make_read(struct slot *s) {
  rados_read_op_t r = rados_create_read_op();
  const char *keys[1] = {omap_key};
  rados_read_op_stat(r, &s->size, &s->mtime, &s->rv_stat);
  rados_read_op_read(r, 0, OP_SIZE, s->buf, &s->got, &s->rv_read);
  rados_read_op_getxattrs(r, &s->xattrs, &s->rv_xattrs);
  rados_read_op_omap_get_vals_by_keys(r, keys, 1, &s->omap, &s->rv_omap);
  return r;
}

/* Checks a finished read's outputs and frees its iterators. */
static void check_read(struct slot *s) {
  if (s->rv_stat < 0 || s->rv_read < 0 || s->rv_xattrs < 0 || s->rv_omap < 0)
    die("a read op's part failed", -EIO);
  if (s->got != OP_SIZE || s->size != OP_SIZE) die("short read", -EIO);
  const char *name, *val;
  size_t len;
  int n = 0;
  while (rados_getxattrs_next(s->xattrs, &name, &val, &len) == 0 && name) n++;
  rados_getxattrs_end(s->xattrs);
  char *k, *v;
  int m = 0;
  while (rados_omap_get_next(s->omap, &k, &v, &len) == 0 && k) m++;
  rados_omap_get_end(s->omap);
  if (n != 1 || m != 1) die("xattr or omap key missing", -EIO);
}

/* Starts op `i` (object i) in slot `s`, asynchronously. */
static void start_op(rados_ioctx_t io, const char *prefix, struct slot *s,
                     long i, int write) {
  char oid[256];
  oid_of(oid, sizeof oid, prefix, i);
  int r = rados_aio_create_completion2(s, on_complete, &s->c);
  if (r < 0) die("rados_aio_create_completion2", r);
  s->start = now_s();
  if (write) {
    s->w = make_write();
    r = rados_aio_write_op_operate(s->w, io, s->c, oid, NULL, 0);
  } else {
    s->rd = make_read(s);
    r = rados_aio_read_op_operate(s->rd, io, s->c, oid, 0);
  }
  if (r < 0) die("aio operate", r);
}

/* Runs `n` ops on objects 0..n, `q` in flight; returns wall seconds. */
static double run_ops(rados_ioctx_t io, const char *prefix, long n, int q,
                      int write, double *lat) {
  struct slot *slots = calloc(q, sizeof *slots);
  char oid[256];
  long next = 0, done = 0;
  double t0 = now_s();
  if (q == 1) {
    struct slot *s = &slots[0];
    for (long i = 0; i < n; i++) {
      oid_of(oid, sizeof oid, prefix, i);
      double at = now_s();
      int r;
      if (write) {
        rados_write_op_t w = make_write();
        r = rados_write_op_operate(w, io, oid, NULL, 0);
        rados_release_write_op(w);
      } else {
        rados_read_op_t rd = make_read(s);
        r = rados_read_op_operate(rd, io, oid, 0);
        rados_release_read_op(rd);
      }
      lat[i] = now_s() - at;
      if (r < 0) die(write ? "write op" : "read op", r);
      if (!write) check_read(s);
    }
    free(slots);
    return now_s() - t0;
  }
  /* q in flight: start one per slot, then restart each slot as its op
   * completes (its latency up to the callback's time) */
  ring_len = q;
  done_ring = calloc(q, sizeof *done_ring);
  done_head = done_tail = 0;
  for (int i = 0; i < q && next < n; i++) {
    slots[i].index = i;
    start_op(io, prefix, &slots[i], next++, write);
  }
  while (done < n) {
    struct slot *s = next_done(slots);
    rados_aio_wait_for_complete(s->c);
    int r = rados_aio_get_return_value(s->c);
    if (r < 0) die(write ? "write op" : "read op", r);
    lat[done++] = s->end - s->start;
    rados_aio_release(s->c);
    if (write) {
      rados_release_write_op(s->w);
    } else {
      check_read(s);
      rados_release_read_op(s->rd);
    }
    if (next < n) start_op(io, prefix, s, next++, write);
  }
  free(done_ring);
  free(slots);
  return now_s() - t0;
}

static void remove_all(rados_ioctx_t io, const char *prefix, long n) {
  char oid[256];
  for (long i = 0; i < n; i++) {
    oid_of(oid, sizeof oid, prefix, i);
    rados_remove(io, oid);
  }
}

static void bench_compound(rados_ioctx_t io, const char *prefix, long n, int q,
                           int write) {
  double *lat = calloc(n, sizeof *lat);
  if (!write) run_ops(io, prefix, n, q, 1, lat);
  double c0 = cpu_s();
  double secs = run_ops(io, prefix, n, q, write, lat);
  double cpu = cpu_s() - c0;
  remove_all(io, prefix, n);
  report(write ? "compound-write" : "compound-read", n, q, secs, cpu, lat);
  free(lat);
}

int main(int argc, char **argv) {
  const char *conf = NULL, *pool = "test", *id = NULL;
  long n = 1000;
  int q = 1, opt;
  while ((opt = getopt(argc, argv, "c:p:n:t:i:")) != -1) {
    switch (opt) {
      case 'c': conf = optarg; break;
      case 'p': pool = optarg; break;
      case 'n': n = atol(optarg); break;
      case 't': q = atoi(optarg); break;
      case 'i': id = optarg; break;
      default: goto usage;
    }
  }
  if (optind + 1 != argc || n < 1 || q < 1) goto usage;
  const char *mode = argv[optind];
  int m = !strcmp(mode, "notify")           ? 0
          : !strcmp(mode, "compound-write") ? 1
          : !strcmp(mode, "compound-read")  ? 2
                                            : -1;
  if (m < 0) goto usage;
  memset(data, 'z', sizeof data);

  rados_t cluster;
  int r = rados_create(&cluster, id);
  if (r < 0) die("rados_create", r);
  r = rados_conf_read_file(cluster, conf);
  if (r < 0) die("rados_conf_read_file", r);
  r = rados_connect(cluster);
  if (r < 0) die("rados_connect", r);
  rados_ioctx_t io;
  r = rados_ioctx_create(cluster, pool, &io);
  if (r < 0) die("rados_ioctx_create", r);

  char host[64] = "", prefix[128];
  gethostname(host, sizeof host - 1);
  snprintf(prefix, sizeof prefix, "opbench_%s_%d", host, (int)getpid());
  if (m == 0)
    bench_notify(io, prefix, n);
  else
    bench_compound(io, prefix, n, q, m == 1);

  rados_ioctx_destroy(io);
  rados_shutdown(cluster);
  return 0;
usage:
  fprintf(stderr,
          "usage: rados_ops_bench -c CONF [-p POOL] [-n COUNT] [-t IN_FLIGHT] "
          "[-i ID] notify|compound-write|compound-read\n");
  return 2;
}
