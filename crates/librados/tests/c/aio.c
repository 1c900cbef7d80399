/*
 * librados's asynchronous C API (rados_aio_*), rados_ioctx_pool_stat and
 * rados_cluster_stat, end to end, against a cluster (CEPH_CONF, pool
 * "test"). Compiled against Ceph's librados.h and run by
 * scripts/interop/librados-c.sh linked to Ceph's librados.so.2 and to
 * ours; the two outputs (stdout) must be the same. Only what both
 * libraries must agree on is printed; the rest is printed as checks
 * ("... ok: 1"). The handle's thread count and the usage figures go to
 * stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>
#include <pthread.h>
/* rados_aio_wait_for_safe and rados_aio_is_safe are deprecated (the same
 * as their "complete" twins now); they are part of what is checked. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <rados/librados.h>

static int failures = 0;
static pthread_t main_thread;

#define SHOW(what, r) printf("%s: %d\n", what, (int)(r))
#define CHECK(what, cond)                                   \
	do {                                                \
		int ok_ = !!(cond);                         \
		printf("%s ok: %d\n", what, ok_);           \
		if (!ok_)                                   \
			failures++;                         \
	} while (0)

#define N 16

/* What each completion's callbacks saw. */
struct slot {
	int completes;     /* "complete" callbacks */
	int safes;         /* "safe" callbacks */
	int on_main;       /* callbacks on the submitting thread */
	int complete_seen; /* rados_aio_is_complete inside the callback */
	int rv_seen;       /* rados_aio_get_return_value inside it */
	rados_completion_t c;
};

static void on_complete(rados_completion_t c, void *arg)
{
	struct slot *s = arg;
	if (pthread_equal(pthread_self(), main_thread))
		__atomic_add_fetch(&s->on_main, 1, __ATOMIC_SEQ_CST);
	s->complete_seen = rados_aio_is_complete(c);
	s->rv_seen = rados_aio_get_return_value(c);
	__atomic_add_fetch(&s->completes, 1, __ATOMIC_SEQ_CST);
}

static void on_safe(rados_completion_t c, void *arg)
{
	struct slot *s = arg;
	(void)c;
	if (pthread_equal(pthread_self(), main_thread))
		__atomic_add_fetch(&s->on_main, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&s->safes, 1, __ATOMIC_SEQ_CST);
}

static int threads(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* librados's wait_for_complete may return before the callbacks have run
 * (ours returns after them): wait for them, at most 30 s. */
static int settle(struct slot *s, int n, int with_safe)
{
	int i, tries;
	for (tries = 0; tries < 3000; tries++) {
		int done = 1;
		for (i = 0; i < n; i++)
			if (__atomic_load_n(&s[i].completes, __ATOMIC_SEQ_CST) < 1 ||
			    (with_safe && __atomic_load_n(&s[i].safes, __ATOMIC_SEQ_CST) < 1))
				done = 0;
		if (done)
			break;
		usleep(10000);
	}
	usleep(50000); /* a second call would come now */
	return tries < 3000;
}

/* Prints a round's return values and checks its callbacks. */
static void report(const char *what, struct slot *s, int n, int with_safe)
{
	int i, once = 1, off_main = 1, seen = 1, complete = 1;
	CHECK(what, settle(s, n, with_safe));
	printf("%s rv:", what);
	for (i = 0; i < n; i++) {
		printf(" %d", rados_aio_get_return_value(s[i].c));
		if (s[i].completes != 1 || s[i].safes != (with_safe ? 1 : 0))
			once = 0;
		if (s[i].on_main)
			off_main = 0;
		if (!s[i].complete_seen || s[i].rv_seen != rados_aio_get_return_value(s[i].c))
			seen = 0;
		if (rados_aio_is_complete(s[i].c) != 1 || rados_aio_is_safe(s[i].c) != 1)
			complete = 0;
	}
	printf("\n");
	printf("%s callbacks exactly once ok: %d\n", what, once);
	printf("%s callbacks off the caller's thread ok: %d\n", what, off_main);
	printf("%s callbacks see the result ok: %d\n", what, seen);
	printf("%s complete and safe ok: %d\n", what, complete);
	failures += !once + !off_main + !seen + !complete;
}

static void fresh(struct slot *s, int n, int two)
{
	int i;
	for (i = 0; i < n; i++) {
		memset(&s[i], 0, sizeof s[i]);
		if (two)
			rados_aio_create_completion2(&s[i], on_complete, &s[i].c);
		else
			rados_aio_create_completion(&s[i], on_complete, on_safe, &s[i].c);
	}
}

static void release(struct slot *s, int n)
{
	int i;
	for (i = 0; i < n; i++)
		rados_aio_release(s[i].c);
}

/* One aio call on object OBJ of pool "test" (put DATA, append DATA, get,
 * stat, rm), waited for, for the both-ways checks of librados-c.sh. */
static int one_call(int argc, char **argv)
{
	rados_t c;
	rados_ioctx_t io;
	rados_completion_t comp;
	char buf[4096];
	uint64_t size = 0;
	int r;
	const char *op = argv[1], *obj = argv[2];

	if (rados_create(&c, "admin") || rados_conf_read_file(c, getenv("CEPH_CONF")) ||
	    rados_connect(c) || rados_ioctx_create(c, "test", &io) ||
	    rados_aio_create_completion2(NULL, NULL, &comp)) {
		fprintf(stderr, "cannot connect\n");
		return 2;
	}
	if (!strcmp(op, "put") && argc == 4)
		r = rados_aio_write_full(io, obj, comp, argv[3], strlen(argv[3]));
	else if (!strcmp(op, "append") && argc == 4)
		r = rados_aio_append(io, obj, comp, argv[3], strlen(argv[3]));
	else if (!strcmp(op, "get") && argc == 3)
		r = rados_aio_read(io, obj, comp, buf, sizeof buf, 0);
	else if (!strcmp(op, "stat") && argc == 3)
		r = rados_aio_stat(io, obj, comp, &size, NULL);
	else if (!strcmp(op, "rm") && argc == 3)
		r = rados_aio_remove(io, obj, comp);
	else {
		fprintf(stderr, "usage: aio [put|append|get|stat|rm OBJ ARG...]\n");
		return 2;
	}
	if (r == 0) {
		rados_aio_wait_for_complete(comp);
		r = rados_aio_get_return_value(comp);
	}
	if (r >= 0 && !strcmp(op, "get"))
		fwrite(buf, 1, r, stdout);
	if (r >= 0 && !strcmp(op, "stat"))
		printf("%llu\n", (unsigned long long)size);
	rados_aio_release(comp);
	rados_ioctx_destroy(io);
	rados_shutdown(c);
	if (r < 0)
		fprintf(stderr, "%s: %s\n", op, strerror(-r));
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *conf = getenv("CEPH_CONF");
	char base[32], obj[N][64], data[N][32], back[N][64];
	struct slot s[N];
	rados_t c;
	rados_ioctx_t io;
	uint64_t size = 0;
	time_t mtime = 0, now = time(NULL);
	int i, r, ok;

	if (!conf) {
		fprintf(stderr, "set CEPH_CONF\n");
		return 2;
	}
	if (argc > 2)
		return one_call(argc, argv);
	main_thread = pthread_self();
	snprintf(base, sizeof base, "librados-aio-%d", (int)getpid());
	for (i = 0; i < N; i++) {
		snprintf(obj[i], sizeof obj[i], "%s-%d", base, i);
		snprintf(data[i], sizeof data[i], "aio object %02d payload", i);
	}

	SHOW("create", rados_create(&c, "admin"));
	SHOW("conf_read_file", rados_conf_read_file(c, conf));
	SHOW("connect", rados_connect(c));
	SHOW("ioctx_create", rados_ioctx_create(c, "test", &io));

	/* 16 writes in flight, then waited for one by one. */
	fresh(s, N, 0);
	r = 0;
	for (i = 0; i < N; i++)
		r |= rados_aio_write_full(io, obj[i], s[i].c, data[i], strlen(data[i]));
	SHOW("write_full submitted", r);
	/* Writes copy the caller's data: scribbling on it now changes nothing. */
	for (i = 0; i < N; i++)
		memset(data[i] + 4, 'X', 3);
	for (i = 0; i < N; i++)
		r |= rados_aio_wait_for_complete(s[i].c);
	SHOW("wait_for_complete", r);
	report("write_full", s, N, 1);
	release(s, N);
	for (i = 0; i < N; i++)
		snprintf(data[i], sizeof data[i], "aio object %02d payload", i);

	/* 16 reads in flight (completion2: one callback), into the caller's
	 * buffers, written before each completes. */
	fresh(s, N, 1);
	memset(back, 0, sizeof back);
	r = 0;
	for (i = 0; i < N; i++)
		r |= rados_aio_read(io, obj[i], s[i].c, back[i], sizeof back[i], 0);
	SHOW("read submitted", r);
	for (i = 0; i < N; i++)
		r |= rados_aio_wait_for_safe(s[i].c);
	SHOW("wait_for_safe", r);
	report("read", s, N, 0);
	ok = 1;
	for (i = 0; i < N; i++)
		if (rados_aio_get_return_value(s[i].c) != (int)strlen(data[i]) ||
		    memcmp(back[i], data[i], strlen(data[i])) != 0)
			ok = 0;
	CHECK("read data as written", ok);
	release(s, N);

	/* Partial and offset reads, writes at an offset, appends. */
	fresh(s, 4, 0);
	rados_aio_read(io, obj[0], s[0].c, back[0], 5, 0);
	rados_aio_write(io, obj[1], s[1].c, "WRITE", 5, 2);
	rados_aio_append(io, obj[2], s[2].c, "+tail", 5);
	rados_aio_read(io, obj[3], s[3].c, back[3], sizeof back[3], 11);
	for (i = 0; i < 4; i++)
		rados_aio_wait_for_complete(s[i].c);
	report("mixed", s, 4, 1);
	printf("read 5: %.5s\n", back[0]);
	printf("read from 11: %.*s\n", rados_aio_get_return_value(s[3].c) > 0 ?
	       (int)strlen(data[3]) - 11 : 0, back[3]);
	release(s, 4);

	/* aio_flush: every mutation submitted before it has completed. */
	fresh(s, N, 0);
	for (i = 0; i < N; i++)
		rados_aio_append(io, obj[i], s[i].c, "+flushed", 8);
	SHOW("aio_flush", rados_aio_flush(io));
	ok = 1;
	for (i = 0; i < N; i++)
		if (!rados_aio_is_complete(s[i].c))
			ok = 0;
	CHECK("flushed appends complete", ok);
	report("append", s, N, 1);
	release(s, N);

	/* stat via aio: size written before completion. */
	fresh(s, 3, 0);
	rados_aio_stat(io, obj[1], s[0].c, &size, &mtime);
	rados_aio_stat(io, "librados-aio-none", s[1].c, NULL, NULL);
	rados_aio_read(io, "librados-aio-none", s[2].c, back[0], sizeof back[0], 0);
	for (i = 0; i < 3; i++)
		rados_aio_wait_for_complete(s[i].c);
	report("stat", s, 3, 1);
	printf("stat size: %llu\n", (unsigned long long)size);
	CHECK("stat mtime now", mtime >= now - 600 && mtime <= time(NULL) + 600);
	release(s, 3);
	r = rados_read(io, obj[1], back[1], sizeof back[1], 0);
	printf("read after write at 2: %.*s\n", r > 0 ? r : 0, back[1]);
	r = rados_read(io, obj[2], back[2], sizeof back[2], 0);
	printf("read after appends: %.*s\n", r > 0 ? r : 0, back[2]);

	/* Released before completing: the op keeps its reference and still
	 * calls back; the caller's reference is gone. */
	memset(&s[0], 0, sizeof s[0]);
	rados_aio_create_completion(&s[0], on_complete, on_safe, &s[0].c);
	rados_aio_write_full(io, obj[0], s[0].c, "released early", 14);
	rados_aio_release(s[0].c);
	rados_aio_flush(io);
	r = settle(s, 1, 1);
	CHECK("released early calls back", r && s[0].completes == 1 && s[0].safes == 1);
	r = rados_read(io, obj[0], back[0], sizeof back[0], 0);
	printf("read released early: %.*s\n", r > 0 ? r : 0, back[0]);

	/* Removes, the second of each failing. */
	fresh(s, N, 0);
	for (i = 0; i < N; i++)
		rados_aio_remove(io, obj[i], s[i].c);
	rados_aio_flush(io);
	report("remove", s, N, 1);
	release(s, N);
	fresh(s, 2, 1);
	rados_aio_remove(io, obj[0], s[0].c);
	rados_aio_stat(io, obj[1], s[1].c, &size, NULL);
	rados_aio_wait_for_complete(s[0].c);
	rados_aio_wait_for_complete(s[1].c);
	report("after remove", s, 2, 0);
	release(s, 2);

	/* A completion with no callbacks at all. */
	rados_aio_create_completion(NULL, NULL, NULL, &s[0].c);
	printf("is_complete before: %d\n", rados_aio_is_complete(s[0].c));
	rados_aio_write_full(io, obj[0], s[0].c, "x", 1);
	rados_aio_wait_for_complete(s[0].c);
	printf("no callbacks: complete %d rv %d\n", rados_aio_is_complete(s[0].c),
	       rados_aio_get_return_value(s[0].c));
	rados_aio_release(s[0].c);
	SHOW("remove", rados_remove(io, obj[0]));

	/* Usage, as the monitors have it from the mgr (values change between
	 * runs: only their consistency is checked). */
	{
		struct rados_pool_stat_t ps;
		struct rados_cluster_stat_t cs;
		memset(&ps, 0xff, sizeof ps);
		memset(&cs, 0xff, sizeof cs);
		SHOW("ioctx_pool_stat", rados_ioctx_pool_stat(io, &ps));
		CHECK("pool_stat kb", ps.num_kb == (ps.num_bytes + 1023) >> 10);
		CHECK("pool_stat copies", ps.num_object_copies >= ps.num_objects &&
		      ps.num_objects < (1ull << 40) && ps.num_user_bytes <= ps.num_bytes &&
		      ps.compressed_bytes_alloc < (1ull << 50));
		SHOW("cluster_stat", rados_cluster_stat(c, &cs));
		CHECK("cluster_stat", cs.kb > 0 && cs.kb_used <= cs.kb && cs.kb_avail <= cs.kb &&
		      cs.num_objects < (1ull << 40));
		fprintf(stderr, "pool test: %llu objects %llu bytes; cluster: %llu kB, %llu used, %llu objects\n",
			(unsigned long long)ps.num_objects, (unsigned long long)ps.num_bytes,
			(unsigned long long)cs.kb, (unsigned long long)cs.kb_used,
			(unsigned long long)cs.num_objects);
	}

	fprintf(stderr, "threads: %d\n", threads());
	rados_ioctx_destroy(io);
	rados_shutdown(c);
	printf("failures: %d\n", failures);
	return failures ? 1 : 0;
}
