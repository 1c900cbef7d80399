/*
 * The first slice of librados's C API, end to end, against a cluster
 * (CEPH_CONF, pool "test"). Compiled against Ceph's librados.h and run
 * twice by scripts/interop/librados-c.sh: linked to Ceph's librados.so.2
 * and to ours; the two outputs (stdout) must be the same. Only what both
 * libraries must agree on is printed (no object names, ids or times);
 * facts that differ between runs are printed as checks ("... ok: 1").
 * The handle's thread count goes to stderr.
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
#include <rados/librados.h>

static int failures = 0;

#define SHOW(what, r) printf("%s: %d\n", what, (int)(r))
#define CHECK(what, cond)                                   \
	do {                                                \
		int ok_ = !!(cond);                         \
		printf("%s ok: %d\n", what, ok_);           \
		if (!ok_)                                   \
			failures++;                         \
	} while (0)

/* Threads sharing one handle and one I/O context (librados: both may be
 * used from any number of threads once connected). */
#define WORKERS 8
#define ROUNDS 20
struct worker {
	rados_ioctx_t io;
	char obj[200];
	int errors;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char data[64], back[64];
	int i, r;
	for (i = 0; i < ROUNDS; i++) {
		int n = snprintf(data, sizeof data, "%s round %d", w->obj, i);
		if (rados_write_full(w->io, w->obj, data, n) != 0)
			w->errors++;
		r = rados_read(w->io, w->obj, back, sizeof back, 0);
		if (r != n || memcmp(data, back, n) != 0)
			w->errors++;
	}
	if (rados_remove(w->io, w->obj) != 0)
		w->errors++;
	return NULL;
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

static void mon_command(rados_t c, const char *cmd)
{
	const char *cmds[1] = {cmd};
	char *out = NULL, *outs = NULL;
	size_t outlen = 0, outslen = 0;
	int r = rados_mon_command(c, cmds, 1, "", 0, &out, &outlen, &outs, &outslen);
	printf("mon_command %s: %d\n", cmd, r);
	printf("  out (%zu): %.*s\n", outlen, (int)outlen, out ? out : "");
	printf("  outs (%zu): %.*s\n", outslen, (int)outslen, outs ? outs : "");
	CHECK("  out NULL iff empty", (out == NULL) == (outlen == 0));
	rados_buffer_free(out);
	rados_buffer_free(outs);
}

/* `basic put|get|setxattr|getxattr|rm OBJ [ARG...]` on pool test: one
 * call, for the script to check that Ceph's `rados` tool reads what this
 * library wrote, and the reverse. */
static int one_call(int argc, char **argv)
{
	rados_t c;
	rados_ioctx_t io;
	char buf[4096];
	int r;
	const char *op = argv[1], *obj = argv[2];

	if (rados_create2(&c, "ceph", "client.admin", 0) ||
	    rados_conf_read_file(c, getenv("CEPH_CONF")) || rados_connect(c) ||
	    rados_ioctx_create(c, "test", &io)) {
		fprintf(stderr, "cannot connect\n");
		return 2;
	}
	if (!strcmp(op, "put") && argc == 4)
		r = rados_write_full(io, obj, argv[3], strlen(argv[3]));
	else if (!strcmp(op, "setxattr") && argc == 5)
		r = rados_setxattr(io, obj, argv[3], argv[4], strlen(argv[4]));
	else if (!strcmp(op, "rm") && argc == 3)
		r = rados_remove(io, obj);
	else if (!strcmp(op, "get") && argc == 3) {
		r = rados_read(io, obj, buf, sizeof buf, 0);
		if (r >= 0)
			fwrite(buf, 1, r, stdout);
	} else if (!strcmp(op, "getxattr") && argc == 4) {
		r = rados_getxattr(io, obj, argv[3], buf, sizeof buf);
		if (r >= 0)
			fwrite(buf, 1, r, stdout);
	} else {
		fprintf(stderr, "usage: basic [put|get|setxattr|getxattr|rm OBJ ARG...]\n");
		r = -EINVAL;
	}
	rados_ioctx_destroy(io);
	rados_shutdown(c);
	if (r < 0)
		fprintf(stderr, "%s: %s\n", op, strerror(-r));
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *conf = getenv("CEPH_CONF");
	char name[128], obj[160], obj2[160], buf[256];
	int major = -1, minor = -1, extra = -1, r;
	rados_t c, bad;
	rados_ioctx_t io, io2, none;
	uint64_t size = 0;
	time_t mtime = 0;
	int64_t pool;

	if (!conf) {
		fprintf(stderr, "set CEPH_CONF\n");
		return 2;
	}
	if (argc > 2)
		return one_call(argc, argv);
	snprintf(name, sizeof name, "librados-c-%d", (int)getpid());
	snprintf(obj, sizeof obj, "%s-obj", name);
	snprintf(obj2, sizeof obj2, "%s-obj2", name);

	rados_version(&major, &minor, &extra);
	printf("version: %d.%d.%d\n", major, minor, extra);

	/* configuring */
	SHOW("create2 bad name", rados_create2(&bad, "ceph", "admin", 0));
	SHOW("create2", rados_create2(&c, "ceph", "client.admin", 0));
	SHOW("conf_read_file missing", rados_conf_read_file(c, "/nonexistent/ceph.conf"));
	SHOW("conf_read_file", rados_conf_read_file(c, conf));
	r = rados_conf_get(c, "keyring", buf, sizeof buf);
	printf("conf_get keyring: %d %s\n", r, r == 0 ? buf : "");
	r = rados_conf_get(c, "fsid", buf, sizeof buf);
	printf("conf_get fsid: %d %s\n", r, r == 0 ? buf : "");
	SHOW("conf_get fsid short", rados_conf_get(c, "fsid", buf, 8));
	SHOW("conf_set", rados_conf_set(c, "client_mount_timeout", "30"));
	r = rados_conf_get(c, "client_mount_timeout", buf, sizeof buf);
	printf("conf_get client_mount_timeout: %d %s\n", r, r == 0 ? buf : "");
	{
		const char *argv[] = {"prog", "--rados-osd-op-timeout", "60", "extra", "more"};
		const char *rem[5];
		int i;
		memset(rem, 0x55, sizeof rem);
		SHOW("conf_parse_argv_remainder",
		     rados_conf_parse_argv_remainder(c, 5, argv, rem));
		for (i = 0; i < 5; i++)
			printf("  remainder %d: %s\n", i, rem[i] ? rem[i] : "(null)");
		SHOW("conf_parse_argv", rados_conf_parse_argv(c, 3, argv));
	}
	SHOW("conf_parse_env", rados_conf_parse_env(c, NULL));
	SHOW("pool_lookup before connect", rados_pool_lookup(c, "test"));
	SHOW("ioctx_create before connect", rados_ioctx_create(c, "test", &none));
	SHOW("instance_id before connect", rados_get_instance_id(c));

	/* connected */
	SHOW("connect", rados_connect(c));
	SHOW("connect again", rados_connect(c));
	fprintf(stderr, "threads after connect: %d\n", threads());
	r = rados_cluster_fsid(c, buf, sizeof buf);
	printf("cluster_fsid: %d %s\n", r, r >= 0 ? buf : "");
	SHOW("cluster_fsid short", rados_cluster_fsid(c, buf, 36));
	CHECK("instance_id nonzero", rados_get_instance_id(c) != 0);
	SHOW("wait_for_latest_osdmap", rados_wait_for_latest_osdmap(c));

	/* pools */
	pool = rados_pool_lookup(c, "test");
	CHECK("pool_lookup test", pool > 0);
	SHOW("pool_lookup missing", rados_pool_lookup(c, "no-such-pool-librados"));
	r = rados_pool_reverse_lookup(c, pool, buf, sizeof buf);
	printf("pool_reverse_lookup: %d %s\n", r, r >= 0 ? buf : "");
	SHOW("pool_reverse_lookup short", rados_pool_reverse_lookup(c, pool, buf, 4));
	SHOW("pool_reverse_lookup missing", rados_pool_reverse_lookup(c, 999999, buf, sizeof buf));
	{
		int need = rados_pool_list(c, NULL, 0);
		char *list = malloc(need > 0 ? need : 1);
		const char *p;
		int found = 0;
		CHECK("pool_list size", need > 5);
		r = rados_pool_list(c, list, need);
		CHECK("pool_list same size", r == need);
		for (p = list; *p; p += strlen(p) + 1)
			if (!strcmp(p, "test"))
				found = 1;
		CHECK("pool_list has test", found);
		SHOW("pool_list NULL buffer with length", rados_pool_list(c, NULL, 10));
		free(list);
	}
	SHOW("pool_create", rados_pool_create(c, name));
	CHECK("pool_lookup created", rados_pool_lookup(c, name) > 0);
	SHOW("pool_create again", rados_pool_create(c, name));
	SHOW("pool_delete", rados_pool_delete(c, name));
	SHOW("pool_lookup deleted", rados_pool_lookup(c, name));
	SHOW("pool_delete missing", rados_pool_delete(c, name));

	/* I/O contexts */
	SHOW("ioctx_create missing", rados_ioctx_create(c, "no-such-pool-librados", &none));
	SHOW("ioctx_create", rados_ioctx_create(c, "test", &io));
	SHOW("ioctx_create2", rados_ioctx_create2(c, pool, &io2));
	SHOW("ioctx_create2 missing", rados_ioctx_create2(c, 999999, &none));
	CHECK("ioctx_get_id", rados_ioctx_get_id(io) == pool && rados_ioctx_get_id(io2) == pool);
	r = rados_ioctx_get_pool_name(io2, buf, sizeof buf);
	printf("ioctx_get_pool_name: %d %s\n", r, r >= 0 ? buf : "");
	SHOW("ioctx_get_pool_name short", rados_ioctx_get_pool_name(io2, buf, 4));

	/* objects */
	SHOW("stat missing", rados_stat(io, obj, &size, &mtime));
	SHOW("read missing", rados_read(io, obj, buf, sizeof buf, 0));
	SHOW("remove missing", rados_remove(io, obj));
	SHOW("write E2BIG", rados_write(io, obj, "x", (size_t)UINT32_MAX, 0));
	SHOW("write_full", rados_write_full(io, obj, "hello world", 11));
	memset(buf, 0, sizeof buf);
	r = rados_read(io, obj, buf, sizeof buf, 0);
	printf("read: %d %.*s\n", r, r > 0 ? r : 0, buf);
	r = rados_read(io2, obj, buf, 5, 6);
	printf("read at 6 (other ioctx): %d %.*s\n", r, r > 0 ? r : 0, buf);
	SHOW("write at 11", rados_write(io, obj, " again", 6, 11));
	SHOW("append", rados_append(io, obj, "!", 1));
	r = rados_read(io, obj, buf, sizeof buf, 0);
	printf("read: %d %.*s\n", r, r > 0 ? r : 0, buf);
	r = rados_read(io, obj, buf, sizeof buf, 100);
	printf("read past the end: %d\n", r);
	SHOW("stat", rados_stat(io, obj, &size, &mtime));
	printf("  size: %llu\n", (unsigned long long)size);
	CHECK("  mtime recent", labs((long)(time(NULL) - mtime)) < 120);
	SHOW("stat NULL outputs", rados_stat(io, obj, NULL, NULL));
	SHOW("trunc", rados_trunc(io, obj, 5));
	r = rados_read(io, obj, buf, sizeof buf, 0);
	printf("read after trunc: %d %.*s\n", r, r > 0 ? r : 0, buf);

	/* xattrs */
	SHOW("getxattr missing", rados_getxattr(io, obj, "user.a", buf, sizeof buf));
	SHOW("setxattr", rados_setxattr(io, obj, "user.a", "value-1", 7));
	SHOW("setxattr empty", rados_setxattr(io, obj, "user.empty", "", 0));
	r = rados_getxattr(io, obj, "user.a", buf, sizeof buf);
	printf("getxattr: %d %.*s\n", r, r > 0 ? r : 0, buf);
	SHOW("getxattr short", rados_getxattr(io, obj, "user.a", buf, 3));
	SHOW("getxattr empty", rados_getxattr(io, obj, "user.empty", buf, sizeof buf));
	SHOW("rmxattr", rados_rmxattr(io, obj, "user.a"));
	SHOW("getxattr removed", rados_getxattr(io, obj, "user.a", buf, sizeof buf));
	SHOW("getxattr on missing object", rados_getxattr(io, obj2, "user.a", buf, sizeof buf));

	/* namespaces and locator keys */
	rados_ioctx_set_namespace(io, "librados-ns");
	SHOW("stat in another namespace", rados_stat(io, obj, &size, NULL));
	SHOW("write_full in namespace", rados_write_full(io, obj, "in ns", 5));
	r = rados_read(io, obj, buf, sizeof buf, 0);
	printf("read in namespace: %d %.*s\n", r, r > 0 ? r : 0, buf);
	SHOW("remove in namespace", rados_remove(io, obj));
	rados_ioctx_set_namespace(io, NULL);
	r = rados_read(io, obj, buf, sizeof buf, 0);
	printf("read in default namespace: %d %.*s\n", r, r > 0 ? r : 0, buf);
	rados_ioctx_locator_set_key(io, "librados-key");
	SHOW("write_full with key", rados_write_full(io, obj2, "keyed", 5));
	r = rados_read(io, obj2, buf, sizeof buf, 0);
	printf("read with key: %d %.*s\n", r, r > 0 ? r : 0, buf);
	rados_ioctx_locator_set_key(io, NULL);
	SHOW("stat without key", rados_stat(io, obj2, &size, NULL));
	rados_ioctx_locator_set_key(io, "librados-key");
	SHOW("remove with key", rados_remove(io, obj2));
	rados_ioctx_locator_set_key(io, "");

	SHOW("remove", rados_remove(io, obj));
	SHOW("stat removed", rados_stat(io, obj, &size, &mtime));

	/* threads sharing the handle and the context */
	{
		pthread_t t[WORKERS];
		struct worker w[WORKERS];
		int i, errors = 0;
		for (i = 0; i < WORKERS; i++) {
			w[i].io = io;
			w[i].errors = 0;
			snprintf(w[i].obj, sizeof w[i].obj, "%s-thread-%d", name, i);
			pthread_create(&t[i], NULL, work, &w[i]);
		}
		for (i = 0; i < WORKERS; i++) {
			pthread_join(t[i], NULL);
			errors += w[i].errors;
		}
		printf("%d threads x %d writes and reads on one ioctx: %d errors\n", WORKERS, ROUNDS, errors);
		if (errors)
			failures++;
	}

	/* monitor commands */
	mon_command(c, "{\"prefix\": \"osd pool get\", \"pool\": \"test\", \"var\": \"size\", \"format\": \"json\"}");
	mon_command(c, "{\"prefix\": \"osd pool get\", \"pool\": \"no-such-pool-librados\", \"var\": \"size\"}");
	mon_command(c, "{\"prefix\": \"no such command\"}");
	{
		const char *parts[2] = {"{\"prefix\": \"osd pool ls\",", " \"format\": \"json\"}"};
		char *out = NULL, *outs = NULL;
		size_t outlen = 0, outslen = 0;
		r = rados_mon_command(c, parts, 2, NULL, 0, &out, &outlen, &outs, &outslen);
		printf("mon_command in two parts: %d\n", r);
		CHECK("  lists test", out && memmem(out, outlen, "\"test\"", 6) != NULL);
		rados_buffer_free(out);
		rados_buffer_free(outs);
	}
	rados_buffer_free(NULL);

	fprintf(stderr, "threads before shutdown: %d\n", threads());
	rados_ioctx_destroy(io);
	rados_ioctx_destroy(io2);
	rados_shutdown(c);
	printf("failures: %d\n", failures);
	return failures ? 1 : 0;
}
