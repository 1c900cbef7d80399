/*
 * librados's compound operations (rados_write_op_*, rados_read_op_*),
 * the omap and xattr iterators, rados_exec / cmpext / writesame and the
 * aio calls beside them, end to end, against a cluster (CEPH_CONF, pool
 * "test"). Compiled against Ceph's librados.h and run by
 * scripts/interop/librados-c.sh linked to Ceph's librados.so.2 and to
 * ours; the two outputs (stdout) must be the same: each call's return,
 * each op's prval and outputs (a sentinel, 777, shows one left
 * unwritten). What differs between runs (versions, times) is printed as
 * checks ("... ok: 1").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
/* rados_read_op_omap_get_vals / _keys are deprecated (their "2" forms
 * add pmore); they are part of what is checked. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <rados/librados.h>

static int failures = 0;

#define SENT 777
#define SHOW(what, r) printf("%s: %d\n", what, (int)(r))
#define CHECK(what, cond)                                   \
	do {                                                \
		int ok_ = !!(cond);                         \
		printf("%s ok: %d\n", what, ok_);           \
		if (!ok_)                                   \
			failures++;                         \
	} while (0)

static void show_bytes(const char *what, const char *p, size_t n)
{
	size_t i;
	printf("%s: [%zu] ", what, n);
	if (!p) {
		printf("(null)\n");
		return;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c >= 32 && c < 127)
			putchar(c);
		else
			printf("\\x%02x", c);
	}
	putchar('\n');
}

static void show_omap(const char *what, rados_omap_iter_t it, int two)
{
	char *k, *v;
	size_t kl, vl;
	printf("%s size: %u\n", what, rados_omap_iter_size(it));
	for (;;) {
		int r;
		if (two) {
			r = rados_omap_get_next2(it, &k, &v, &kl, &vl);
		} else {
			r = rados_omap_get_next(it, &k, &v, &vl);
			kl = k ? strlen(k) : 0;
		}
		if (r || !k) {
			printf("%s end: r=%d key=%s val=%s kl=%zu vl=%zu\n", what, r,
			       k ? "set" : "NULL", v ? "set" : "NULL", kl, vl);
			break;
		}
		printf("%s entry: %.*s (%zu) = ", what, (int)kl, k, kl);
		show_bytes("", v, vl);
	}
}

static void show_xattrs(const char *what, rados_xattrs_iter_t it)
{
	const char *n, *v;
	size_t l;
	for (;;) {
		int r = rados_getxattrs_next(it, &n, &v, &l);
		if (r || !n) {
			printf("%s end: r=%d name=%s val=%s len=%zu\n", what, r,
			       n ? "set" : "NULL", v ? "set" : "NULL", l);
			break;
		}
		printf("%s: %s = ", what, n);
		show_bytes("", v, l);
	}
}

static void show_obj(rados_ioctx_t io, const char *what, const char *oid)
{
	char buf[256];
	int r = rados_read(io, oid, buf, sizeof buf, 0);
	if (r < 0)
		SHOW(what, r);
	else
		show_bytes(what, buf, r);
}

/* The aio callbacks: how many ran, and off the caller's thread. */
static pthread_t main_thread;
static int callbacks = 0, on_main = 0;
static void on_complete(rados_completion_t c, void *arg)
{
	(void)c;
	(void)arg;
	if (pthread_equal(pthread_self(), main_thread))
		__atomic_add_fetch(&on_main, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&callbacks, 1, __ATOMIC_SEQ_CST);
}

static int wait_rv(rados_completion_t c)
{
	rados_aio_wait_for_complete_and_cb(c);
	return rados_aio_get_return_value(c);
}

int main(void)
{
	rados_t cl;
	rados_ioctx_t io;
	char a[64], b[64], m[64], h[64];
	const char *keys[] = {"k1", "k2", "k3", "k4", "k5"};
	const char *vals[] = {"v1", "", "v3", "value4", "v5"};
	size_t lens[] = {2, 0, 2, 6, 2};
	rados_write_op_t w;
	rados_read_op_t rd;
	int r, p1, p2, p3, p4;
	uint64_t v, size;
	time_t mtime;
	char buf[256];
	size_t n;
	unsigned char more;
	rados_omap_iter_t it1, it2, it3;
	rados_xattrs_iter_t xi;
	char *out;
	size_t out_len;
	rados_completion_t c;

	main_thread = pthread_self();
	snprintf(a, sizeof a, "ops-%d-a", (int)getpid());
	snprintf(b, sizeof b, "ops-%d-b", (int)getpid());
	snprintf(m, sizeof m, "ops-%d-missing", (int)getpid());
	snprintf(h, sizeof h, "ops-%d-hello", (int)getpid());
	if (rados_create(&cl, "admin") || rados_conf_read_file(cl, getenv("CEPH_CONF")) ||
	    rados_connect(cl) || rados_ioctx_create(cl, "test", &io)) {
		printf("setup failed\n");
		return 1;
	}

	/* --- write ops --- */
	w = rados_create_write_op();
	rados_write_op_create(w, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	rados_write_op_write_full(w, "hello world", 11);
	rados_write_op_setxattr(w, "x1", "v1", 2);
	rados_write_op_setxattr(w, "x2", "", 0);
	rados_write_op_omap_set(w, keys, vals, lens, 5);
	SHOW("create+write_full+setxattr+omap_set", rados_write_op_operate(w, io, a, NULL, 0));
	SHOW("same op again (its ops were taken)", rados_write_op_operate(w, io, a, NULL, 0));
	rados_write_op_create(w, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	SHOW("exclusive create of an existing object", rados_write_op_operate(w, io, a, NULL, 0));
	rados_release_write_op(w);
	v = rados_get_last_version(io);
	CHECK("last version set", v > 0);

	p1 = p2 = SENT;
	w = rados_create_write_op();
	rados_write_op_assert_version(w, v);
	rados_write_op_cmpext(w, "hello", 5, 0, &p1);
	rados_write_op_omap_cmp(w, "k1", LIBRADOS_CMPXATTR_OP_EQ, "v1", 2, &p2);
	rados_write_op_cmpxattr(w, "x1", LIBRADOS_CMPXATTR_OP_EQ, "v1", 2);
	rados_write_op_append(w, "!", 1);
	SHOW("asserts that hold + append", rados_write_op_operate(w, io, a, NULL, 0));
	SHOW(" cmpext prval", p1);
	SHOW(" omap_cmp prval", p2);
	rados_release_write_op(w);
	CHECK("version moved", rados_get_last_version(io) > v);
	v = rados_get_last_version(io);

	p1 = SENT;
	w = rados_create_write_op();
	rados_write_op_assert_version(w, v + 100);
	rados_write_op_append(w, "?", 1);
	SHOW("assert_version newer", rados_write_op_operate(w, io, a, NULL, 0));
	rados_release_write_op(w);
	w = rados_create_write_op();
	rados_write_op_assert_version(w, v - 1);
	rados_write_op_append(w, "?", 1);
	SHOW("assert_version older", rados_write_op_operate(w, io, a, NULL, 0));
	rados_release_write_op(w);

	p1 = p2 = SENT;
	w = rados_create_write_op();
	rados_write_op_cmpext(w, "hello XXrld", 11, 0, &p1);
	rados_write_op_append(w, "?", 1);
	SHOW("cmpext mismatch", rados_write_op_operate(w, io, a, NULL, 0));
	SHOW(" cmpext prval", p1);
	rados_release_write_op(w);

	p1 = p2 = SENT;
	w = rados_create_write_op();
	rados_write_op_omap_cmp(w, "k1", LIBRADOS_CMPXATTR_OP_EQ, "nope", 4, &p1);
	rados_write_op_append(w, "?", 1);
	SHOW("omap_cmp mismatch", rados_write_op_operate(w, io, a, NULL, 0));
	SHOW(" omap_cmp prval", p1);
	rados_release_write_op(w);

	w = rados_create_write_op();
	rados_write_op_cmpxattr(w, "x1", LIBRADOS_CMPXATTR_OP_GT, "v9", 2);
	rados_write_op_append(w, "?", 1);
	SHOW("cmpxattr mismatch", rados_write_op_operate(w, io, a, NULL, 0));
	rados_release_write_op(w);
	show_obj(io, "after the failed ones", a);

	w = rados_create_write_op();
	rados_write_op_rmxattr(w, "nosuch");
	rados_write_op_set_flags(w, LIBRADOS_OP_FLAG_FAILOK);
	rados_write_op_setxattr(w, "x3", "three", 5);
	SHOW("rmxattr missing, FAILOK + setxattr", rados_write_op_operate(w, io, a, NULL, 0));
	rados_release_write_op(w);
	r = rados_getxattr(io, a, "x3", buf, sizeof buf);
	show_bytes("x3", r >= 0 ? buf : NULL, r >= 0 ? (size_t)r : 0);

	w = rados_create_write_op();
	rados_write_op_rmxattr(w, "nosuch");
	rados_write_op_setxattr(w, "x4", "four", 4);
	SHOW("rmxattr missing without FAILOK", rados_write_op_operate(w, io, a, NULL, 0));
	rados_release_write_op(w);

	w = rados_create_write_op();
	rados_write_op_write(w, "ABC", 3, 2);
	rados_write_op_writesame(w, "xy", 2, 6, 12);
	rados_write_op_zero(w, 6, 2);
	rados_write_op_set_alloc_hint(w, 4 << 20, 4 << 10);
	SHOW("write+writesame+zero+alloc_hint", rados_write_op_operate(w, io, a, NULL, 0));
	rados_release_write_op(w);
	show_obj(io, "data", a);
	w = rados_create_write_op();
	rados_write_op_truncate(w, 10);
	rados_write_op_rmxattr(w, "x2");
	rados_write_op_set_alloc_hint2(w, 1 << 20, 1 << 12, LIBRADOS_ALLOC_HINT_FLAG_SEQUENTIAL_WRITE);
	SHOW("truncate+rmxattr+alloc_hint2", rados_write_op_operate(w, io, a, NULL, 0));
	rados_release_write_op(w);
	show_obj(io, "data", a);

	{
		const char *rk[] = {"k5"};
		const char *ks2[] = {"bin\x01key", "k6"};
		const char *vs2[] = {"b", "six"};
		size_t kl2[] = {7, 2}, vl2[] = {1, 3};
		size_t rkl[] = {2};
		w = rados_create_write_op();
		rados_write_op_omap_rm_keys(w, rk, 1);
		rados_write_op_omap_set2(w, ks2, vs2, kl2, vl2, 2);
		rados_write_op_omap_rm_range2(w, "k2", 2, "k4", 2);
		SHOW("omap rm_keys+set2+rm_range2", rados_write_op_operate(w, io, a, NULL, 0));
		rados_release_write_op(w);
		w = rados_create_write_op();
		rados_write_op_omap_rm_keys2(w, rk, rkl, 1);
		SHOW("omap rm_keys2 of a missing key", rados_write_op_operate(w, io, a, NULL, 0));
		rados_release_write_op(w);
	}

	w = rados_create_write_op();
	SHOW("empty write op", rados_write_op_operate(w, io, a, NULL, 0));
	rados_write_op_assert_exists(w);
	rados_write_op_write_full(w, "x", 1);
	SHOW("assert_exists on a missing object", rados_write_op_operate(w, io, m, NULL, 0));
	rados_release_write_op(w);

	{
		time_t t = 1000000000;
		w = rados_create_write_op();
		rados_write_op_create(w, LIBRADOS_CREATE_IDEMPOTENT, NULL);
		rados_write_op_write_full(w, "bbb", 3);
		SHOW("write op with mtime", rados_write_op_operate(w, io, b, &t, 0));
		rados_release_write_op(w);
		r = rados_stat(io, b, &size, &mtime);
		SHOW("stat", r);
		CHECK("mtime as given", mtime == t);
	}

	/* class calls */
	p1 = p2 = SENT;
	w = rados_create_write_op();
	rados_write_op_exec(w, "hello", "record_hello", "ops", 3, &p1);
	SHOW("exec record_hello", rados_write_op_operate(w, io, h, NULL, 0));
	SHOW(" prval", p1);
	SHOW("same op again", rados_write_op_operate(w, io, h, NULL, 0));
	SHOW(" prval", p1);
	rados_write_op_exec(w, "hello", "record_hello", "ops", 3, &p1);
	SHOW("exec record_hello again", rados_write_op_operate(w, io, h, NULL, 0));
	SHOW(" prval", p1);
	rados_release_write_op(w);
	show_obj(io, "hello object", h);
	w = rados_create_write_op();
	rados_write_op_exec(w, "hello", "nosuchmethod", "", 0, &p2);
	SHOW("exec unknown method", rados_write_op_operate(w, io, h, NULL, 0));
	SHOW(" prval", p2);
	rados_release_write_op(w);

	r = rados_exec(io, a, "hello", "say_hello", "ops", 3, buf, sizeof buf);
	SHOW("rados_exec say_hello", r);
	if (r > 0)
		show_bytes(" out", buf, r);
	SHOW("rados_exec small buffer", rados_exec(io, a, "hello", "say_hello", "ops", 3, buf, 4));
	SHOW("rados_exec no such class", rados_exec(io, a, "nosuchclass", "m", "", 0, buf, sizeof buf));
	SHOW("rados_exec on a missing object", rados_exec(io, m, "hello", "say_hello", "", 0, buf, sizeof buf));
	{
		/* cls_lock get_info {name "l"}: ENCODE_START(1, 1), string */
		const char in[] = {1, 1, 5, 0, 0, 0, 1, 0, 0, 0, 'l'};
		r = rados_exec(io, a, "lock", "get_info", in, sizeof in, buf, sizeof buf);
		SHOW("rados_exec lock.get_info", r);
		if (r > 0)
			show_bytes(" out", buf, r);
	}

	/* cmpext, writesame */
	SHOW("rados_cmpext match", rados_cmpext(io, a, "heABC", 5, 0));
	SHOW("rados_cmpext mismatch", rados_cmpext(io, a, "heABx", 5, 0));
	SHOW("rados_cmpext past the end", rados_cmpext(io, a, "zz", 2, 100));
	SHOW("rados_cmpext on a missing object", rados_cmpext(io, m, "a", 1, 0));
	SHOW("rados_writesame", rados_writesame(io, b, "ab", 2, 8, 1));
	show_obj(io, "writesame data", b);
	SHOW("rados_writesame not a multiple", rados_writesame(io, b, "abc", 3, 8, 0));
	SHOW("rados_writesame no data", rados_writesame(io, b, "", 0, 8, 0));

	/* --- read ops --- */
	p1 = p2 = p3 = p4 = SENT;
	size = SENT;
	mtime = SENT;
	n = SENT;
	memset(buf, 0, sizeof buf);
	rd = rados_create_read_op();
	rados_read_op_assert_exists(rd);
	rados_read_op_stat(rd, &size, &mtime, &p1);
	rados_read_op_read(rd, 1, 4, buf, &n, &p2);
	rados_read_op_cmpext(rd, "heABC", 5, 0, &p3);
	rados_read_op_cmpxattr(rd, "x1", LIBRADOS_CMPXATTR_OP_EQ, "v1", 2);
	SHOW("read op stat+read+cmpext", rados_read_op_operate(rd, io, a, 0));
	SHOW(" stat prval", p1);
	SHOW(" size", size);
	CHECK(" mtime set", mtime != SENT);
	SHOW(" read prval", p2);
	show_bytes(" read", buf, n);
	SHOW(" cmpext prval", p3);
	rados_release_read_op(rd);

	p1 = p2 = p3 = SENT;
	n = SENT;
	rd = rados_create_read_op();
	rados_read_op_read(rd, 0, 3, buf, &n, &p1);
	rados_read_op_cmpext(rd, "heABx", 5, 0, &p2);
	rados_read_op_stat(rd, &size, &mtime, &p3);
	SHOW("read op with a cmpext mismatch", rados_read_op_operate(rd, io, a, 0));
	SHOW(" read prval", p1);
	SHOW(" read bytes", n);
	SHOW(" cmpext prval", p2);
	SHOW(" stat prval", p3);
	rados_release_read_op(rd);

	p1 = SENT;
	n = SENT;
	rd = rados_create_read_op();
	rados_read_op_read(rd, 0, 0, buf, &n, &p1);
	SHOW("read op read into a 0-byte buffer", rados_read_op_operate(rd, io, a, 0));
	SHOW(" prval", p1);
	SHOW(" bytes", n);
	rados_release_read_op(rd);

	rd = rados_create_read_op();
	rados_read_op_assert_version(rd, rados_get_last_version(io) + 50);
	SHOW("read op assert_version newer", rados_read_op_operate(rd, io, a, 0));
	rados_release_read_op(rd);

	p1 = p2 = p3 = SENT;
	more = 7;
	rd = rados_create_read_op();
	rados_read_op_stat(rd, &size, &mtime, &p1);
	rados_read_op_omap_get_vals2(rd, NULL, NULL, 10, &it1, &more, &p2);
	SHOW("read op on a missing object", rados_read_op_operate(rd, io, m, 0));
	SHOW(" stat prval", p1);
	SHOW(" omap prval", p2);
	SHOW(" more", more);
	show_omap(" vals", it1, 1);
	rados_omap_get_end(it1);
	rados_release_read_op(rd);

	/* omap: pages, keys, by keys */
	p1 = p2 = p3 = p4 = SENT;
	more = 7;
	{
		unsigned char more2 = 7;
		const char *want[] = {"k1", "k6", "nosuch"};
		rd = rados_create_read_op();
		rados_read_op_omap_get_vals2(rd, "", "", 2, &it1, &more, &p1);
		rados_read_op_omap_get_keys2(rd, "k1", 10, &it2, &more2, &p2);
		rados_read_op_omap_get_vals_by_keys(rd, want, 3, &it3, &p3);
		rados_read_op_omap_cmp(rd, "k6", LIBRADOS_CMPXATTR_OP_EQ, "six", 3, &p4);
		SHOW("read op omap vals+keys+by_keys+cmp", rados_read_op_operate(rd, io, a, 0));
		SHOW(" vals prval", p1);
		SHOW(" vals more", more);
		show_omap(" vals", it1, 1);
		SHOW(" keys prval", p2);
		SHOW(" keys more", more2);
		show_omap(" keys", it2, 0);
		SHOW(" by_keys prval", p3);
		show_omap(" by_keys", it3, 1);
		SHOW(" omap_cmp prval", p4);
		rados_omap_get_end(it1);
		rados_omap_get_end(it2);
		rados_omap_get_end(it3);
		rados_release_read_op(rd);
	}
	{
		char after[64] = "";
		int page = 0;
		do {
			char *k, *vv;
			size_t vl;
			more = 7;
			p1 = SENT;
			rd = rados_create_read_op();
			rados_read_op_omap_get_vals2(rd, after, "k", 1, &it1, &more, &p1);
			r = rados_read_op_operate(rd, io, a, 0);
			printf("page %d: r=%d prval=%d more=%d size=%u", page, r, p1, more,
			       rados_omap_iter_size(it1));
			while (rados_omap_get_next(it1, &k, &vv, &vl) == 0 && k) {
				printf(" %s", k);
				snprintf(after, sizeof after, "%s", k);
			}
			printf("\n");
			rados_omap_get_end(it1);
			rados_release_read_op(rd);
			page++;
		} while (more && page < 10);
	}
	p1 = SENT;
	rd = rados_create_read_op();
	rados_read_op_omap_get_vals(rd, NULL, NULL, 100, &it1, &p1);
	rados_read_op_omap_get_keys(rd, NULL, 100, &it2, &p2);
	SHOW("read op omap_get_vals (v1) + keys (v1)", rados_read_op_operate(rd, io, a, 0));
	show_omap(" vals", it1, 1);
	show_omap(" keys", it2, 1);
	rados_omap_get_end(it1);
	rados_omap_get_end(it2);
	rados_release_read_op(rd);

	/* xattrs */
	p1 = SENT;
	rd = rados_create_read_op();
	rados_read_op_getxattrs(rd, &xi, &p1);
	SHOW("read op getxattrs", rados_read_op_operate(rd, io, a, 0));
	SHOW(" prval", p1);
	show_xattrs(" xattr", xi);
	rados_getxattrs_end(xi);
	rados_release_read_op(rd);
	SHOW("rados_getxattrs", rados_getxattrs(io, a, &xi));
	show_xattrs(" xattr", xi);
	rados_getxattrs_end(xi);
	SHOW("rados_getxattrs on a missing object", rados_getxattrs(io, m, &xi));

	/* exec and checksum in a read op */
	p1 = p2 = p3 = SENT;
	out = (char *)&p3;
	out_len = SENT;
	{
		char sum[64];
		const char seed[] = {-1, -1, -1, -1};
		memset(sum, 0, sizeof sum);
		rd = rados_create_read_op();
		rados_read_op_exec(rd, "hello", "say_hello", "reader", 6, &out, &out_len, &p1);
		rados_read_op_checksum(rd, LIBRADOS_CHECKSUM_TYPE_CRC32C, seed, 4, 0, 8, 0, sum, sizeof sum, &p2);
		SHOW("read op exec+checksum", rados_read_op_operate(rd, io, a, 0));
		SHOW(" exec prval", p1);
		show_bytes(" exec out", out, out_len);
		rados_buffer_free(out);
		SHOW(" checksum prval", p2);
		show_bytes(" checksum", sum, 8);
		rados_release_read_op(rd);
		p2 = SENT;
		rd = rados_create_read_op();
		rados_read_op_checksum(rd, LIBRADOS_CHECKSUM_TYPE_CRC32C, seed, 4, 0, 8, 0, sum, 4, &p2);
		SHOW("read op checksum, small buffer", rados_read_op_operate(rd, io, a, 0));
		SHOW(" prval", p2);
		rados_release_read_op(rd);
	}
	p1 = SENT;
	out = (char *)&p3;
	out_len = SENT;
	rd = rados_create_read_op();
	rados_read_op_exec(rd, "hello", "nosuch", "", 0, &out, &out_len, &p1);
	SHOW("read op exec unknown method", rados_read_op_operate(rd, io, a, 0));
	SHOW(" prval", p1);
	printf(" out: %s len %d\n", out ? "set" : "NULL", (int)out_len);
	rados_release_read_op(rd);

	/* --- aio --- */
	p1 = p2 = SENT;
	w = rados_create_write_op();
	rados_write_op_cmpext(w, "bab", 3, 0, &p1);
	rados_write_op_omap_set(w, keys, vals, lens, 2);
	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio write op submit", rados_aio_write_op_operate(w, io, c, b, NULL, 0));
	rados_release_write_op(w);
	SHOW(" rv", wait_rv(c));
	SHOW(" cmpext prval", p1);
	SHOW(" is_complete_and_cb", rados_aio_is_complete_and_cb(c));
	SHOW(" is_safe_and_cb", rados_aio_is_safe_and_cb(c));
	rados_aio_release(c);

	{
		time_t t = 1500000000;
		w = rados_create_write_op();
		rados_write_op_setxattr(w, "at", "t", 1);
		rados_aio_create_completion2(NULL, on_complete, &c);
		SHOW("aio write op with mtime", rados_aio_write_op_operate(w, io, c, b, &t, 0));
		rados_release_write_op(w);
		SHOW(" rv", wait_rv(c));
		rados_aio_release(c);
		SHOW(" stat", rados_stat(io, b, &size, &mtime));
		SHOW(" mtime as given", mtime == t);
	}

	p1 = p2 = SENT;
	more = 7;
	size = SENT;
	rd = rados_create_read_op();
	rados_read_op_omap_get_vals2(rd, NULL, NULL, 10, &it1, &more, &p1);
	rados_read_op_stat(rd, &size, NULL, &p2);
	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio read op submit", rados_aio_read_op_operate(rd, io, c, b, 0));
	rados_release_read_op(rd);
	SHOW(" rv", wait_rv(c));
	SHOW(" omap prval", p1);
	SHOW(" more", more);
	show_omap(" vals", it1, 1);
	rados_omap_get_end(it1);
	SHOW(" stat prval", p2);
	SHOW(" size", size);
	rados_aio_release(c);

	rd = rados_create_read_op();
	p1 = SENT;
	rados_read_op_assert_exists(rd);
	rados_read_op_cmpext(rd, "a", 1, 0, &p1);
	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio read op on a missing object", rados_aio_read_op_operate(rd, io, c, m, 0));
	rados_release_read_op(rd);
	SHOW(" rv", wait_rv(c));
	SHOW(" cmpext prval", p1);
	rados_aio_release(c);

	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio_cmpext", rados_aio_cmpext(io, a, c, "heABx", 5, 0));
	SHOW(" rv", wait_rv(c));
	rados_aio_release(c);
	rados_aio_create_completion2(NULL, on_complete, &c);
	memset(buf, 0, sizeof buf);
	SHOW("aio_exec", rados_aio_exec(io, a, c, "hello", "say_hello", "aio", 3, buf, sizeof buf));
	r = wait_rv(c);
	SHOW(" rv", r);
	if (r > 0)
		show_bytes(" out", buf, r);
	rados_aio_release(c);
	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio_setxattr", rados_aio_setxattr(io, a, c, "ax", "aval", 4));
	SHOW(" rv", wait_rv(c));
	rados_aio_release(c);
	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio_getxattr", rados_aio_getxattr(io, a, c, "ax", buf, sizeof buf));
	r = wait_rv(c);
	SHOW(" rv", r);
	if (r > 0)
		show_bytes(" value", buf, r);
	rados_aio_release(c);
	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio_getxattr small buffer", rados_aio_getxattr(io, a, c, "ax", buf, 2));
	SHOW(" rv", wait_rv(c));
	rados_aio_release(c);
	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio_rmxattr", rados_aio_rmxattr(io, a, c, "ax"));
	SHOW(" rv", wait_rv(c));
	rados_aio_release(c);
	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio_getxattr removed", rados_aio_getxattr(io, a, c, "ax", buf, sizeof buf));
	SHOW(" rv", wait_rv(c));
	rados_aio_release(c);
	rados_aio_create_completion2(NULL, on_complete, &c);
	xi = NULL;
	SHOW("aio_getxattrs", rados_aio_getxattrs(io, a, c, &xi));
	SHOW(" rv", wait_rv(c));
	if (xi) {
		show_xattrs(" xattr", xi);
		rados_getxattrs_end(xi);
	}
	rados_aio_release(c);
	rados_aio_create_completion2(NULL, on_complete, &c);
	xi = NULL;
	SHOW("aio_getxattrs on a missing object", rados_aio_getxattrs(io, m, c, &xi));
	SHOW(" rv", wait_rv(c));
	SHOW(" iter untouched", xi == NULL);
	rados_aio_release(c);
	rados_aio_create_completion2(NULL, on_complete, &c);
	SHOW("aio_writesame", rados_aio_writesame(io, b, c, "Z", 1, 3, 0));
	SHOW(" rv", wait_rv(c));
	rados_aio_release(c);
	show_obj(io, "writesame data", b);
	SHOW("aio_writesame not a multiple", rados_aio_writesame(io, b, NULL, "ZZ", 2, 3, 0));
	CHECK("callbacks ran off the caller's thread", callbacks > 0 && on_main == 0);

	/* the rest of the family */
	{
		struct timespec ts = {1200000000, 0};
		const char *bk[] = {"k1xx", "k2"};
		size_t bkl[] = {2, 2};
		char sum[64];
		const char seed[] = {-1, -1, -1, -1};
		w = rados_create_write_op();
		p1 = p2 = SENT;
		rados_write_op_omap_cmp2(w, "k1zz", LIBRADOS_CMPXATTR_OP_EQ, "v1", 2, 2, &p1);
		rados_write_op_write_full(w, "operate2", 8);
		SHOW("omap_cmp2 + write_full by operate2", rados_write_op_operate2(w, io, b, &ts, 0));
		SHOW(" omap_cmp2 prval", p1);
		rados_release_write_op(w);
		SHOW(" stat", rados_stat(io, b, &size, &mtime));
		SHOW(" mtime as given", mtime == ts.tv_sec);
		rd = rados_create_read_op();
		p1 = p2 = p3 = SENT;
		n = SENT;
		memset(buf, 0, sizeof buf);
		rados_read_op_omap_cmp2(rd, "k2zz", LIBRADOS_CMPXATTR_OP_EQ, "x", 2, 1, &p1);
		rados_read_op_omap_get_vals_by_keys2(rd, bk, 2, bkl, &it1, &p2);
		rados_read_op_exec_user_buf(rd, "hello", "say_hello", "user", 4, buf, sizeof buf, &n, &p3);
		SHOW("read op omap_cmp2 mismatch + by_keys2 + exec_user_buf", rados_read_op_operate(rd, io, b, 0));
		SHOW(" omap_cmp2 prval", p1);
		SHOW(" by_keys2 prval", p2);
		show_omap(" by_keys2", it1, 1);
		rados_omap_get_end(it1);
		SHOW(" exec prval", p3);
		SHOW(" exec used", n);
		rados_release_read_op(rd);
		rd = rados_create_read_op();
		p2 = p3 = SENT;
		n = SENT;
		rados_read_op_omap_get_vals_by_keys2(rd, bk, 2, bkl, &it1, &p2);
		rados_read_op_exec_user_buf(rd, "hello", "say_hello", "user", 4, buf, sizeof buf, &n, &p3);
		SHOW("read op by_keys2 + exec_user_buf", rados_read_op_operate(rd, io, b, 0));
		SHOW(" by_keys2 prval", p2);
		show_omap(" by_keys2", it1, 1);
		rados_omap_get_end(it1);
		SHOW(" exec prval", p3);
		show_bytes(" exec out", buf, n);
		rados_release_read_op(rd);
		rd = rados_create_read_op();
		p3 = SENT;
		n = SENT;
		rados_read_op_exec_user_buf(rd, "hello", "say_hello", "user", 4, buf, 5, &n, &p3);
		SHOW("read op exec_user_buf, small buffer", rados_read_op_operate(rd, io, b, 0));
		SHOW(" exec prval", p3);
		SHOW(" exec used", n);
		rados_release_read_op(rd);
		memset(sum, 0, sizeof sum);
		SHOW("rados_checksum", rados_checksum(io, b, LIBRADOS_CHECKSUM_TYPE_CRC32C, seed, 4, 8, 0, 4, sum, sizeof sum));
		show_bytes(" sums", sum, 12);
		SHOW("rados_checksum small buffer", rados_checksum(io, b, LIBRADOS_CHECKSUM_TYPE_CRC32C, seed, 4, 8, 0, 4, sum, 8));
		SHOW("rados_checksum on a missing object", rados_checksum(io, m, LIBRADOS_CHECKSUM_TYPE_CRC32C, seed, 4, 8, 0, 0, sum, sizeof sum));
	}
	{
		rados_completion_t cs[4], f;
		int i, done = 1;
		for (i = 0; i < 4; i++) {
			rados_aio_create_completion2(NULL, NULL, &cs[i]);
			rados_aio_append(io, b, cs[i], "+", 1);
		}
		rados_aio_create_completion2(NULL, on_complete, &f);
		SHOW("aio_flush_async", rados_aio_flush_async(io, f));
		rados_aio_wait_for_complete_and_cb(f);
		SHOW(" rv", rados_aio_get_return_value(f));
		for (i = 0; i < 4; i++) {
			done &= rados_aio_is_complete(cs[i]);
			rados_aio_release(cs[i]);
		}
		SHOW(" earlier writes complete", done);
		rados_aio_release(f);
		show_obj(io, "after the appends", b);
	}

	/* clean up */
	SHOW("remove a", rados_remove(io, a));
	w = rados_create_write_op();
	rados_write_op_remove(w);
	SHOW("write op remove b", rados_write_op_operate(w, io, b, NULL, 0));
	SHOW("same op again", rados_write_op_operate(w, io, b, NULL, 0));
	rados_write_op_remove(w);
	SHOW("write op remove b again", rados_write_op_operate(w, io, b, NULL, 0));
	rados_release_write_op(w);
	rados_remove(io, h);
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	printf("failures: %d\n", failures);
	return failures != 0;
}
