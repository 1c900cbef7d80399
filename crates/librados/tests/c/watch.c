/*
 * librados's watch/notify, locks, object listing and snapshots through
 * its C API, end to end, against a cluster (CEPH_CONF, pool "test"; two
 * pools "watch-PID" and "watch-PID-sm" are created and deleted).
 * Compiled against Ceph's librados.h and run by
 * scripts/interop/librados-c.sh linked to Ceph's librados.so.2 and to
 * ours; the two outputs (stdout) must be the same. Only what both
 * libraries must agree on is printed; the rest (ids, cookies, addresses,
 * times, threads) is checked here and printed as "... ok: 1".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <pthread.h>
/* rados_watch and rados_unwatch (version 1) are deprecated; they are part
 * of what is checked. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <rados/librados.h>

static int failures = 0;
static pthread_t main_thread;
static char prefix[64];

#define SHOW(what, r) printf("%s: %d\n", what, (int)(r))
#define CHECK(what, cond)                                   \
	do {                                                \
		int ok_ = !!(cond);                         \
		printf("%s ok: %d\n", what, ok_);           \
		if (!ok_)                                   \
			failures++;                         \
	} while (0)

/* What a watch's callbacks saw. */
struct watcher {
	rados_ioctx_t io;
	const char *oid;
	uint64_t handle;
	int notifies;
	int errors;
	int on_main;
	int handle_ok;
	int unwatch_self; /* unwatch from the callback: its result */
	int self_unwatched;
	int no_ack;       /* do not acknowledge */
	int last_err;     /* what the error callback got */
	char last[64];
};

static void watch_cb(void *arg, uint64_t notify_id, uint64_t handle,
		     uint64_t notifier_id, void *data, size_t len)
{
	struct watcher *w = arg;
	char reply[96];
	(void)notifier_id;
	if (pthread_equal(pthread_self(), main_thread))
		w->on_main++;
	w->handle_ok = (handle == w->handle);
	snprintf(w->last, sizeof(w->last), "%.*s", (int)len, data ? (char *)data : "");
	w->notifies++;
	snprintf(reply, sizeof(reply), "ack-%d:%s", w->notifies, w->last);
	if (!w->no_ack)
		rados_notify_ack(w->io, w->oid, notify_id, handle, reply, strlen(reply));
	if (w->unwatch_self == 1) {
		w->unwatch_self = rados_unwatch2(w->io, handle);
		w->self_unwatched = 1;
	}
}

static void watch_err(void *arg, uint64_t handle, int err)
{
	struct watcher *w = arg;
	if (pthread_equal(pthread_self(), main_thread))
		w->on_main++;
	w->handle_ok = (handle == w->handle);
	w->last_err = err;
	__atomic_add_fetch(&w->errors, 1, __ATOMIC_SEQ_CST);
}

/* A version 1 watch's callback: librados acknowledges for it. */
struct v1 {
	int calls;
	int opcode;
	int ver;
	int on_main;
};

static void watch_v1_cb(uint8_t opcode, uint64_t ver, void *arg)
{
	struct v1 *v = arg;
	if (pthread_equal(pthread_self(), main_thread))
		v->on_main++;
	v->opcode = opcode;
	v->ver = (int)ver;
	v->calls++;
}

/* The acks and timeouts of a notify's reply, in the reply's order. */
static void show_reply(const char *what, char *buf, size_t len, uint64_t gid,
		       uint64_t cookie)
{
	struct notify_ack_t *acks = NULL;
	struct notify_timeout_t *timeouts = NULL;
	size_t nr_acks = 0, nr_timeouts = 0;
	char label[128];
	int r = rados_decode_notify_response(buf, len, &acks, &nr_acks, &timeouts,
					     &nr_timeouts);
	snprintf(label, sizeof(label), "%s decode", what);
	SHOW(label, r);
	if (r < 0)
		return;
	printf("%s acks: %zu timeouts: %zu\n", what, nr_acks, nr_timeouts);
	for (size_t i = 0; i < nr_acks; i++) {
		printf("%s ack %zu: %.*s (%llu bytes)\n", what, i,
		       (int)acks[i].payload_len, acks[i].payload ? acks[i].payload : "",
		       (unsigned long long)acks[i].payload_len);
		snprintf(label, sizeof(label), "%s ack %zu from the watcher", what, i);
		CHECK(label, acks[i].notifier_id == gid && acks[i].cookie == cookie);
	}
	rados_free_notify_response(acks, nr_acks, timeouts);
}

static void test_watch(rados_t c1, rados_ioctx_t io1, rados_t c2, rados_ioctx_t io2)
{
	char oid[96], oid2[96];
	struct watcher w = {0}, w2 = {0};
	char *reply = NULL;
	size_t reply_len = 0;
	uint64_t gid = rados_get_instance_id(c1);
	int r;

	snprintf(oid, sizeof(oid), "%s-watched", prefix);
	snprintf(oid2, sizeof(oid2), "%s-watched2", prefix);
	SHOW("write_full watched", rados_write_full(io1, oid, "x", 1));
	SHOW("write_full watched2", rados_write_full(io1, oid2, "y", 1));
	w.io = io1;
	w.oid = oid;
	SHOW("watch3", rados_watch3(io1, oid, &w.handle, watch_cb, watch_err, 30, &w));
	r = rados_watch_check(io1, w.handle);
	CHECK("watch_check", r > 0);

	r = rados_notify2(io2, oid, "hello", 5, 10000, &reply, &reply_len);
	SHOW("notify2", r);
	CHECK("notify2 reply", reply != NULL && reply_len > 0);
	show_reply("notify2", reply, reply_len, gid, w.handle);
	rados_buffer_free(reply);
	reply = NULL;
	printf("callbacks: %d last: %s\n", w.notifies, w.last);
	CHECK("callback on the handle's handle", w.handle_ok);
	CHECK("callback not on the caller's thread", w.on_main == 0);

	/* aio_notify, then a notify with no reply buffer */
	rados_completion_t c;
	SHOW("aio_create_completion", rados_aio_create_completion(NULL, NULL, NULL, &c));
	SHOW("aio_notify", rados_aio_notify(io2, oid, c, "again", 5, 10000, &reply, &reply_len));
	SHOW("aio_wait_for_complete", rados_aio_wait_for_complete(c));
	SHOW("aio_notify result", rados_aio_get_return_value(c));
	rados_aio_release(c);
	show_reply("aio_notify", reply, reply_len, gid, w.handle);
	rados_buffer_free(reply);
	reply = NULL;
	SHOW("notify2 no reply buffer", rados_notify2(io2, oid, "", 0, 10000, NULL, NULL));
	SHOW("watch_flush", rados_watch_flush(c1));
	printf("callbacks: %d last: %s\n", w.notifies, w.last);

	/* a callback that unwatches its own watch */
	w2.io = io1;
	w2.oid = oid2;
	w2.unwatch_self = 1;
	SHOW("watch2", rados_watch2(io1, oid2, &w2.handle, watch_cb, watch_err, &w2));
	r = rados_notify2(io2, oid2, "bye", 3, 10000, &reply, &reply_len);
	SHOW("notify2 to the self-unwatching", r);
	show_reply("self-unwatching", reply, reply_len, gid, w2.handle);
	rados_buffer_free(reply);
	reply = NULL;
	SHOW("watch_flush", rados_watch_flush(c1));
	printf("self-unwatch: called %d result %d\n", w2.self_unwatched, w2.unwatch_self);

	/* version 1: rados_watch, its callback, librados's empty ack */
	{
		struct v1 v = {0};
		uint64_t h1 = 0;
		SHOW("watch (v1)", rados_watch(io1, oid2, 0, &h1, watch_v1_cb, &v));
		r = rados_notify2(io2, oid2, "v1", 2, 10000, &reply, &reply_len);
		SHOW("notify2 to a v1 watch", r);
		show_reply("v1", reply, reply_len, gid, h1);
		rados_buffer_free(reply);
		reply = NULL;
		SHOW("watch_flush", rados_watch_flush(c1));
		printf("v1 callbacks: %d opcode %d ver %d\n", v.calls, v.opcode, v.ver);
		CHECK("v1 callback not on the caller's thread", v.on_main == 0);
		SHOW("unwatch (v1)", rados_unwatch(io1, oid2, h1));
	}

	/* aio_watch2 and aio_unwatch */
	{
		struct watcher wa = {0};
		rados_completion_t ca;
		wa.io = io1;
		wa.oid = oid2;
		SHOW("aio_create_completion", rados_aio_create_completion2(NULL, NULL, &ca));
		SHOW("aio_watch2", rados_aio_watch2(io1, oid2, ca, &wa.handle, watch_cb, watch_err,
						    30, &wa));
		SHOW("aio_wait_for_complete", rados_aio_wait_for_complete(ca));
		SHOW("aio_watch2 result", rados_aio_get_return_value(ca));
		rados_aio_release(ca);
		CHECK("aio_watch2 watch_check", rados_watch_check(io1, wa.handle) > 0);
		r = rados_notify2(io2, oid2, "aio", 3, 10000, &reply, &reply_len);
		SHOW("notify2 to an aio watch", r);
		show_reply("aio watch", reply, reply_len, gid, wa.handle);
		rados_buffer_free(reply);
		reply = NULL;
		SHOW("aio_create_completion", rados_aio_create_completion2(NULL, NULL, &ca));
		SHOW("aio_unwatch", rados_aio_unwatch(io1, wa.handle, ca));
		SHOW("aio_wait_for_complete", rados_aio_wait_for_complete(ca));
		SHOW("aio_unwatch result", rados_aio_get_return_value(ca));
		rados_aio_release(ca);
		r = rados_notify2(io2, oid2, "gone", 4, 10000, &reply, &reply_len);
		SHOW("notify2 after aio_unwatch", r);
		show_reply("aio unwatched", reply, reply_len, gid, wa.handle);
		rados_buffer_free(reply);
		reply = NULL;
		printf("aio watch callbacks: %d last: %s\n", wa.notifies, wa.last);
	}

	/* unwatch, then a notify sees no watcher */
	SHOW("unwatch2", rados_unwatch2(io1, w.handle));
	r = rados_notify2(io2, oid, "anyone", 6, 10000, &reply, &reply_len);
	SHOW("notify2 unwatched", r);
	show_reply("unwatched", reply, reply_len, gid, w.handle);
	rados_buffer_free(reply);
	printf("callbacks: %d errors: %d\n", w.notifies, w.errors);
	/* a watcher that does not acknowledge: the notify times out */
	{
		struct watcher wt = {0};
		struct notify_ack_t *acks = NULL;
		struct notify_timeout_t *timeouts = NULL;
		size_t na = 0, nt = 0;
		wt.io = io1;
		wt.oid = oid;
		wt.no_ack = 1;
		SHOW("watch3 silent", rados_watch3(io1, oid, &wt.handle, watch_cb, watch_err, 30, &wt));
		r = rados_notify2(io2, oid, "hush", 4, 1500, &reply, &reply_len);
		SHOW("notify2 to a silent watcher", r);
		CHECK("notify2 timed out: a reply", reply != NULL && reply_len > 0);
		show_reply("silent", reply, reply_len, gid, wt.handle);
		SHOW("decode", rados_decode_notify_response(reply, reply_len, &acks, &na, &timeouts, &nt));
		CHECK("the timeout names the watcher",
		      nt == 1 && timeouts[0].notifier_id == gid && timeouts[0].cookie == wt.handle);
		rados_free_notify_response(acks, na, timeouts);
		rados_buffer_free(reply);
		reply = NULL;
		SHOW("watch_flush", rados_watch_flush(c1));
		printf("silent callbacks: %d last: %s\n", wt.notifies, wt.last);

		/* the watched object removed: the error callback, then
		 * watch_check says the watch is gone */
		SHOW("remove the watched", rados_remove(io2, oid));
		for (int i = 0; i < 100 && !__atomic_load_n(&wt.errors, __ATOMIC_SEQ_CST); i++)
			usleep(100000);
		SHOW("watch_flush", rados_watch_flush(c1));
		printf("errors: %d err: %d\n", wt.errors, wt.last_err);
		CHECK("error callback on the handle's handle, not the caller's thread",
		      wt.handle_ok && wt.on_main == 0);
		SHOW("watch_check after the removal", rados_watch_check(io1, wt.handle));
		SHOW("unwatch2 after the removal", rados_unwatch2(io1, wt.handle));
		SHOW("write_full watched", rados_write_full(io1, oid, "x", 1));
	}
	SHOW("watch_flush c2", rados_watch_flush(c2));
	/* a watch of c2's left registered through its shutdown */
	{
		static struct watcher wl = {0};
		rados_completion_t cl;
		wl.io = io2;
		wl.oid = oid2;
		SHOW("aio_create_completion", rados_aio_create_completion2(NULL, NULL, &cl));
		SHOW("aio_watch", rados_aio_watch(io2, oid2, cl, &wl.handle, watch_cb, watch_err, &wl));
		SHOW("aio_wait_for_complete", rados_aio_wait_for_complete(cl));
		SHOW("aio_watch result", rados_aio_get_return_value(cl));
		rados_aio_release(cl);
		r = rados_notify2(io1, oid2, "left", 4, 10000, &reply, &reply_len);
		SHOW("notify2 to the watch left", r);
		show_reply("left", reply, reply_len, rados_get_instance_id(c2), wl.handle);
		rados_buffer_free(reply);
		reply = NULL;
	}
	SHOW("remove watched", rados_remove(io1, oid));
	SHOW("remove watched2", rados_remove(io1, oid2));
}

static void show_lockers(rados_ioctx_t io, const char *oid, const char *name,
			 const char *expect_client)
{
	int exclusive = -1;
	char tag[64], clients[256], cookies[256], addrs[256];
	size_t tag_len = 1, clients_len = 1, cookies_len = 1, addrs_len = 1;
	ssize_t r = rados_list_lockers(io, oid, name, &exclusive, tag, &tag_len, clients,
				       &clients_len, cookies, &cookies_len, addrs, &addrs_len);
	printf("list_lockers %s small: %zd tag_len %zu cookies_len %zu\n", name, r,
	       tag_len, cookies_len);
	tag_len = sizeof(tag);
	clients_len = sizeof(clients);
	cookies_len = sizeof(cookies);
	addrs_len = sizeof(addrs);
	r = rados_list_lockers(io, oid, name, &exclusive, tag, &tag_len, clients,
			       &clients_len, cookies, &cookies_len, addrs, &addrs_len);
	printf("list_lockers %s: %zd exclusive %d tag '%s' tag_len %zu cookies_len %zu\n",
	       name, r, exclusive, r >= 0 ? tag : "", tag_len, cookies_len);
	if (r > 0) {
		/* the cookies, in the OSD's order */
		char *p = cookies;
		for (ssize_t i = 0; i < r; i++) {
			printf("  cookie %zd: %s\n", i, p);
			p += strlen(p) + 1;
		}
		CHECK("  first locker", strcmp(clients, expect_client) == 0);
		CHECK("  addrs", addrs_len > 0 && strchr(addrs, ':') != NULL && strchr(addrs, '/') != NULL);
	}
}

static void test_locks(rados_t c1, rados_ioctx_t io1, rados_t c2, rados_ioctx_t io2)
{
	char oid[96], me[64], other[64];
	struct timeval tv = {30, 0};
	snprintf(oid, sizeof(oid), "%s-locked", prefix);
	snprintf(me, sizeof(me), "client.%llu", (unsigned long long)rados_get_instance_id(c1));
	snprintf(other, sizeof(other), "client.%llu", (unsigned long long)rados_get_instance_id(c2));

	SHOW("list_lockers no object", rados_list_lockers(io1, oid, "lk", &(int){0}, (char[8]){0},
			&(size_t){8}, (char[8]){0}, &(size_t){8}, (char[8]){0}, &(size_t){8},
			(char[8]){0}, &(size_t){8}));
	SHOW("lock_exclusive", rados_lock_exclusive(io1, oid, "lk", "ck1", "mine", NULL, 0));
	SHOW("lock_exclusive again", rados_lock_exclusive(io1, oid, "lk", "ck1", "mine", NULL, 0));
	SHOW("lock_exclusive renew", rados_lock_exclusive(io1, oid, "lk", "ck1", "mine", &tv,
							  LIBRADOS_LOCK_FLAG_RENEW));
	SHOW("lock_exclusive must renew", rados_lock_exclusive(io1, oid, "lk", "ck1", "mine", &tv,
							       LIBRADOS_LOCK_FLAG_MUST_RENEW));
	SHOW("lock_exclusive must renew, none", rados_lock_exclusive(io1, oid, "lk2", "ck1", "",
								     NULL, LIBRADOS_LOCK_FLAG_MUST_RENEW));
	SHOW("lock_exclusive other cookie", rados_lock_exclusive(io1, oid, "lk", "ck9", "", NULL, 0));
	SHOW("lock_exclusive other handle", rados_lock_exclusive(io2, oid, "lk", "ck2", "", NULL, 0));
	SHOW("lock_shared other handle", rados_lock_shared(io2, oid, "lk", "ck2", "t", "", NULL, 0));
	show_lockers(io2, oid, "lk", me);
	SHOW("unlock other handle", rados_unlock(io2, oid, "lk", "ck1"));
	SHOW("unlock", rados_unlock(io1, oid, "lk", "ck1"));
	SHOW("unlock again", rados_unlock(io1, oid, "lk", "ck1"));
	show_lockers(io1, oid, "lk", me);
	SHOW("lock_exclusive other handle", rados_lock_exclusive(io2, oid, "lk", "ck2", "", NULL, 0));
	SHOW("unlock other handle", rados_unlock(io2, oid, "lk", "ck2"));

	SHOW("lock_shared", rados_lock_shared(io1, oid, "sh", "c1", "tag", "one", &tv, 0));
	SHOW("lock_shared other handle", rados_lock_shared(io2, oid, "sh", "c2", "tag", "two", NULL, 0));
	SHOW("lock_shared other tag", rados_lock_shared(io2, oid, "sh", "c3", "other", "", NULL, 0));
	SHOW("lock_exclusive on shared", rados_lock_exclusive(io2, oid, "sh", "c3", "", NULL, 0));
	show_lockers(io1, oid, "sh", me);
	SHOW("break_lock bad name", rados_break_lock(io2, oid, "sh", "nobody", "c1"));
	SHOW("break_lock", rados_break_lock(io2, oid, "sh", me, "c1"));
	SHOW("break_lock again", rados_break_lock(io2, oid, "sh", me, "c1"));
	show_lockers(io1, oid, "sh", other);
	SHOW("unlock shared", rados_unlock(io2, oid, "sh", "c2"));
	SHOW("remove locked", rados_remove(io1, oid));
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists io's namespace (or all), printing our objects' "nspace/name",
 * sorted. */
static void list_ours(rados_ioctx_t io, const char *what)
{
	rados_list_ctx_t ctx;
	const char *entry, *key, *nspace;
	char *names[64];
	int n = 0, r, total = 0;
	size_t plen = strlen(prefix);
	r = rados_nobjects_list_open(io, &ctx);
	printf("%s list_open: %d\n", what, r);
	if (r < 0)
		return;
	while ((r = rados_nobjects_list_next(ctx, &entry, &key, &nspace)) == 0) {
		total++;
		if (strncmp(entry, prefix, plen) == 0 && n < 64) {
			const char *ns = strncmp(nspace, prefix, plen) == 0 ? nspace + plen : nspace;
			if (asprintf(&names[n], "%s/%s%s%s", ns, entry + plen,
				     key ? " key " : "", key ? key : "") < 0)
				exit(2);
			n++;
		}
	}
	printf("%s list_next end: %d\n", what, r);
	printf("%s list_next after end: %d\n", what, rados_nobjects_list_next(ctx, &entry, NULL, NULL));
	qsort(names, n, sizeof(names[0]), cmp);
	for (int i = 0; i < n; i++) {
		printf("%s: %s\n", what, names[i]);
		free(names[i]);
	}
	rados_nobjects_list_close(ctx);
	(void)total;
}

static void test_listing(rados_ioctx_t io)
{
	char ns1[96], ns2[96], oid[128];
	const char *names[] = {"a", "b", "c"};
	snprintf(ns1, sizeof(ns1), "%s-ns1", prefix);
	snprintf(ns2, sizeof(ns2), "%s-ns2", prefix);

	rados_ioctx_set_namespace(io, ns1);
	for (int i = 0; i < 3; i++) {
		snprintf(oid, sizeof(oid), "%s-%s", prefix, names[i]);
		SHOW("write_full ns1", rados_write_full(io, oid, "1", 1));
	}
	rados_ioctx_set_namespace(io, ns2);
	snprintf(oid, sizeof(oid), "%s-d", prefix);
	SHOW("write_full ns2", rados_write_full(io, oid, "2", 1));
	rados_ioctx_locator_set_key(io, "lockey");
	snprintf(oid, sizeof(oid), "%s-k", prefix);
	SHOW("write_full ns2 with a key", rados_write_full(io, oid, "3", 1));
	rados_ioctx_locator_set_key(io, NULL);

	rados_ioctx_set_namespace(io, ns1);
	list_ours(io, "ns1");
	rados_ioctx_set_namespace(io, ns2);
	list_ours(io, "ns2");
	snprintf(oid, sizeof(oid), "%s-empty", prefix);
	rados_ioctx_set_namespace(io, oid);
	list_ours(io, "empty");
	rados_ioctx_set_namespace(io, LIBRADOS_ALL_NSPACES);
	list_ours(io, "all");

	/* next2's lengths; the hash position and a seek back to the start */
	{
		rados_list_ctx_t ctx;
		const char *entry, *key, *nspace;
		size_t elen = 0, klen = 0, nlen = 0;
		int r, good = 1, n1 = 0, n2 = 0;
		rados_ioctx_set_namespace(io, ns1);
		SHOW("list_open", rados_nobjects_list_open(io, &ctx));
		SHOW("pg_hash_position at the start", rados_nobjects_list_get_pg_hash_position(ctx));
		while ((r = rados_nobjects_list_next2(ctx, &entry, &key, &nspace, &elen, &klen,
						      &nlen)) == 0) {
			good &= elen == strlen(entry) && nlen == strlen(nspace) &&
				klen == (key ? strlen(key) : 0);
			n1++;
		}
		SHOW("list_next2 end", r);
		CHECK("list_next2 lengths", good);
		printf("list_next2 entries: %d\n", n1);
		uint32_t pos = rados_nobjects_list_get_pg_hash_position(ctx);
		SHOW("pg_hash_position at the end", pos);
		SHOW("list_seek 0", rados_nobjects_list_seek(ctx, 0));
		SHOW("pg_hash_position after the seek", rados_nobjects_list_get_pg_hash_position(ctx));
		while (rados_nobjects_list_next(ctx, &entry, NULL, NULL) == 0)
			n2++;
		printf("entries after seek: %d\n", n2);
		SHOW("list_seek 1000", rados_nobjects_list_seek(ctx, 1000));
		SHOW("pg_hash_position after it", rados_nobjects_list_get_pg_hash_position(ctx));
		SHOW("list_seek 5", rados_nobjects_list_seek(ctx, 5));
		SHOW("pg_hash_position after it", rados_nobjects_list_get_pg_hash_position(ctx));
		while ((r = rados_nobjects_list_next(ctx, &entry, NULL, NULL)) == 0)
			;
		SHOW("list_next end after a seek", r);
		SHOW("pg_hash_position at the end", rados_nobjects_list_get_pg_hash_position(ctx));
		rados_nobjects_list_close(ctx);
	}

	/* cursors: the start, an entry, the end */
	{
		rados_list_ctx_t ctx;
		rados_object_list_cursor start, second, end;
		const char *entry;
		char name2[128];
		int r, n = 0;
		rados_ioctx_set_namespace(io, ns1);
		SHOW("list_open", rados_nobjects_list_open(io, &ctx));
		SHOW("get_cursor at the start", rados_nobjects_list_get_cursor(ctx, &start));
		SHOW("list_next", rados_nobjects_list_next(ctx, &entry, NULL, NULL));
		SHOW("list_next", rados_nobjects_list_next(ctx, &entry, NULL, NULL));
		snprintf(name2, sizeof(name2), "%s", entry);
		SHOW("get_cursor at the second", rados_nobjects_list_get_cursor(ctx, &second));
		while ((r = rados_nobjects_list_next(ctx, &entry, NULL, NULL)) == 0)
			;
		SHOW("list_next end", r);
		SHOW("get_cursor at the end", rados_nobjects_list_get_cursor(ctx, &end));
		SHOW("seek_cursor to the end", rados_nobjects_list_seek_cursor(ctx, end));
		SHOW("list_next after it", rados_nobjects_list_next(ctx, &entry, NULL, NULL));
		r = (int)rados_nobjects_list_seek_cursor(ctx, second);
		CHECK("seek_cursor to the second: a placement group", r >= 0 && r < 4096);
		SHOW("list_next after it", rados_nobjects_list_next(ctx, &entry, NULL, NULL));
		CHECK("the second again", strcmp(entry, name2) == 0);
		SHOW("seek_cursor to the start", rados_nobjects_list_seek_cursor(ctx, start));
		while (rados_nobjects_list_next(ctx, &entry, NULL, NULL) == 0)
			n++;
		printf("entries after it: %d\n", n);
		rados_object_list_cursor_free(io, start);
		rados_object_list_cursor_free(io, second);
		rados_object_list_cursor_free(io, end);
		rados_nobjects_list_close(ctx);
	}

	rados_ioctx_set_namespace(io, ns1);
	for (int i = 0; i < 3; i++) {
		snprintf(oid, sizeof(oid), "%s-%s", prefix, names[i]);
		SHOW("remove ns1", rados_remove(io, oid));
	}
	rados_ioctx_set_namespace(io, ns2);
	snprintf(oid, sizeof(oid), "%s-d", prefix);
	SHOW("remove ns2", rados_remove(io, oid));
	rados_ioctx_locator_set_key(io, "lockey");
	snprintf(oid, sizeof(oid), "%s-k", prefix);
	SHOW("remove ns2 with a key", rados_remove(io, oid));
	rados_ioctx_locator_set_key(io, NULL);
	rados_ioctx_set_namespace(io, NULL);
}

static void show_read(rados_ioctx_t io, const char *what, const char *oid)
{
	char buf[32];
	int r = rados_read(io, oid, buf, sizeof(buf), 0);
	printf("%s: %d '%.*s'\n", what, r, r > 0 ? r : 0, buf);
}

static void test_pool_snaps(rados_t c)
{
	char pool[96], name[32];
	rados_ioctx_t io;
	rados_snap_t snaps[8], id = 0, id2 = 0;
	time_t stamp = 0;
	snprintf(pool, sizeof(pool), "%s", prefix);
	SHOW("pool_create", rados_pool_create(c, pool));
	SHOW("ioctx_create", rados_ioctx_create(c, pool, &io));
	SHOW("write_full v1", rados_write_full(io, "obj", "v1", 2));
	SHOW("snap_list none", rados_ioctx_snap_list(io, snaps, 8));
	SHOW("snap_create", rados_ioctx_snap_create(io, "s1"));
	SHOW("snap_create again", rados_ioctx_snap_create(io, "s1"));
	SHOW("write_full v2", rados_write_full(io, "obj", "v2", 2));
	SHOW("snap_create s2", rados_ioctx_snap_create(io, "s2"));
	SHOW("write_full v3", rados_write_full(io, "obj", "v3", 2));
	SHOW("snap_list 1", rados_ioctx_snap_list(io, snaps, 1));
	SHOW("snap_list", rados_ioctx_snap_list(io, snaps, 8));
	SHOW("snap_lookup", rados_ioctx_snap_lookup(io, "s1", &id));
	SHOW("snap_lookup s2", rados_ioctx_snap_lookup(io, "s2", &id2));
	CHECK("snap_list ids", snaps[0] == id && snaps[1] == id2 && id2 > id);
	SHOW("snap_lookup none", rados_ioctx_snap_lookup(io, "nope", &id2));
	SHOW("snap_get_name", rados_ioctx_snap_get_name(io, id, name, sizeof(name)));
	printf("snap name: %s\n", name);
	SHOW("snap_get_name small", rados_ioctx_snap_get_name(io, id, name, 2));
	SHOW("snap_get_name none", rados_ioctx_snap_get_name(io, 9999, name, sizeof(name)));
	SHOW("snap_get_stamp", rados_ioctx_snap_get_stamp(io, id, &stamp));
	CHECK("snap stamp", stamp > 1600000000 && stamp <= time(NULL) + 60);
	SHOW("snap_get_stamp none", rados_ioctx_snap_get_stamp(io, 9999, &stamp));
	rados_ioctx_snap_set_read(io, id);
	show_read(io, "read at s1", "obj");
	rados_ioctx_snap_set_read(io, LIBRADOS_SNAP_HEAD);
	show_read(io, "read at head", "obj");
	SHOW("snap_rollback", rados_ioctx_snap_rollback(io, "obj", "s1"));
	show_read(io, "read after rollback", "obj");
	SHOW("snap_rollback none", rados_ioctx_snap_rollback(io, "obj", "nope"));
	SHOW("selfmanaged_snap_create in a pool-snaps pool",
	     rados_ioctx_selfmanaged_snap_create(io, &id2));
	SHOW("snap_remove", rados_ioctx_snap_remove(io, "s1"));
	SHOW("snap_remove again", rados_ioctx_snap_remove(io, "s1"));
	SHOW("snap_remove s2", rados_ioctx_snap_remove(io, "s2"));
	SHOW("snap_list after", rados_ioctx_snap_list(io, snaps, 8));
	rados_ioctx_destroy(io);
	SHOW("pool_delete", rados_pool_delete(c, pool));
}

static void test_selfmanaged_snaps(rados_t c)
{
	char pool[96];
	rados_ioctx_t io;
	rados_snap_t s1 = 0, s2 = 0, s3 = 0, snaps[2];
	rados_completion_t comp;
	snprintf(pool, sizeof(pool), "%s-sm", prefix);
	SHOW("pool_create sm", rados_pool_create(c, pool));
	SHOW("ioctx_create sm", rados_ioctx_create(c, pool, &io));
	SHOW("write_full v1", rados_write_full(io, "obj", "v1", 2));
	SHOW("selfmanaged_snap_create", rados_ioctx_selfmanaged_snap_create(io, &s1));
	CHECK("selfmanaged snap id", s1 > 0);
	snaps[0] = s1;
	SHOW("selfmanaged_snap_set_write_ctx",
	     rados_ioctx_selfmanaged_snap_set_write_ctx(io, s1, snaps, 1));
	SHOW("write_full v2", rados_write_full(io, "obj", "v2", 2));
	rados_ioctx_snap_set_read(io, s1);
	show_read(io, "read at s1", "obj");
	rados_ioctx_snap_set_read(io, LIBRADOS_SNAP_HEAD);
	show_read(io, "read at head", "obj");
	SHOW("aio_create_completion", rados_aio_create_completion2(NULL, NULL, &comp));
	rados_aio_ioctx_selfmanaged_snap_create(io, &s2, comp);
	SHOW("aio_wait", rados_aio_wait_for_complete(comp));
	SHOW("aio result", rados_aio_get_return_value(comp));
	rados_aio_release(comp);
	CHECK("second snap id", s2 > s1);
	snaps[0] = s2;
	snaps[1] = s1;
	SHOW("set_write_ctx bad order",
	     rados_ioctx_selfmanaged_snap_set_write_ctx(io, s1, snaps, 2));
	SHOW("set_write_ctx", rados_ioctx_selfmanaged_snap_set_write_ctx(io, s2, snaps, 2));
	SHOW("write_full v3", rados_write_full(io, "obj", "v3", 2));
	SHOW("selfmanaged_snap_rollback", rados_ioctx_selfmanaged_snap_rollback(io, "obj", s1));
	show_read(io, "read after rollback", "obj");
	SHOW("snap_create in a self-managed pool", rados_ioctx_snap_create(io, "s"));
	SHOW("selfmanaged_snap_create s3", rados_ioctx_selfmanaged_snap_create(io, &s3));
	SHOW("selfmanaged_snap_remove", rados_ioctx_selfmanaged_snap_remove(io, s3));
	SHOW("aio_create_completion", rados_aio_create_completion2(NULL, NULL, &comp));
	rados_aio_ioctx_selfmanaged_snap_remove(io, s2, comp);
	SHOW("aio_wait", rados_aio_wait_for_complete(comp));
	SHOW("aio result", rados_aio_get_return_value(comp));
	rados_aio_release(comp);
	SHOW("selfmanaged_snap_remove s1", rados_ioctx_selfmanaged_snap_remove(io, s1));
	rados_ioctx_destroy(io);
	SHOW("pool_delete sm", rados_pool_delete(c, pool));
}

static int open_handle(rados_t *c, rados_ioctx_t *io)
{
	if (rados_create(c, "admin") || rados_conf_read_file(*c, getenv("CEPH_CONF")) ||
	    rados_connect(*c) || rados_ioctx_create(*c, "test", io)) {
		fprintf(stderr, "cannot connect\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	rados_t c1, c2;
	rados_ioctx_t io1, io2;
	const char *only = argc > 1 ? argv[1] : "all";
	main_thread = pthread_self();
	snprintf(prefix, sizeof(prefix), "watch-%d", (int)getpid());
	if (open_handle(&c1, &io1) || open_handle(&c2, &io2))
		return 1;
	if (!strcmp(only, "all") || !strcmp(only, "watch"))
		test_watch(c1, io1, c2, io2);
	if (!strcmp(only, "all") || !strcmp(only, "locks"))
		test_locks(c1, io1, c2, io2);
	if (!strcmp(only, "all") || !strcmp(only, "listing"))
		test_listing(io1);
	if (!strcmp(only, "all") || !strcmp(only, "snaps")) {
		test_pool_snaps(c1);
		test_selfmanaged_snaps(c1);
	}
	rados_ioctx_destroy(io2);
	rados_ioctx_destroy(io1);
	rados_shutdown(c2);
	rados_shutdown(c1);
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures ? 1 : 0;
}
