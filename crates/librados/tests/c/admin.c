/*
 * librados's administrative calls against a cluster (CEPH_CONF): commands
 * to a named monitor, an OSD, a PG, the mgr; ping_monitor; the cluster log
 * (monitor_log, monitor_log2); pool creation variants, base tier,
 * alignment, applications and their metadata, FULL_TRY on a full pool;
 * blocklist_add, getaddrs, inconsistent_pg_list, ioctx_get_cluster,
 * rados_cct / create_with_context; service registration's argument
 * checks. Run by scripts/interop/librados-c.sh against Ceph's library and
 * ours; stdout must be the same (what differs between runs, as ids and
 * addresses, is checked here and printed as "ok").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rados/librados.h>

/* The deprecated creation variants are part of what is tested. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static int failures = 0;

#define SHOW(what, r) printf("%s: %d\n", what, (int)(r))
#define CHECK(what, cond)                                   \
	do {                                                \
		int ok_ = !!(cond);                         \
		printf("%s ok: %d\n", what, ok_);           \
		if (!ok_)                                   \
			failures++;                         \
	} while (0)

struct reply {
	int r;
	char *out;
	size_t outlen;
	char *outs;
	size_t outslen;
};

static void reply_free(struct reply *rp)
{
	rados_buffer_free(rp->out);
	rados_buffer_free(rp->outs);
	memset(rp, 0, sizeof *rp);
}

/* A NUL-terminated copy of a reply's output (for strstr). */
static char *text(const char *p, size_t n)
{
	char *s = malloc(n + 1);
	if (n)
		memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static struct reply mon(rados_t c, const char *cmd)
{
	struct reply rp = {0};
	const char *cmds[1] = {cmd};
	rp.r = rados_mon_command(c, cmds, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
	return rp;
}

static int out_has(struct reply *rp, const char *needle)
{
	char *s = text(rp->out, rp->outlen);
	int has = strstr(s, needle) != NULL;
	free(s);
	return has;
}

static void show_outs(const char *what, struct reply *rp)
{
	char *s = text(rp->outs, rp->outslen);
	printf("%s outs: \"%s\"\n", what, s);
	free(s);
}

/* -- the cluster log -- */
static pthread_t main_thread;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_want[128];
static int log_seen, log_off_main, log_fields_ok;
static int log2_seen, log2_fields_ok;

static void log_cb(void *arg, const char *line, const char *who, uint64_t sec,
		   uint64_t nsec, uint64_t seq, const char *level, const char *msg)
{
	(void)seq;
	pthread_mutex_lock(&log_lock);
	if (arg == (void *)log_want && strcmp(msg, log_want) == 0) {
		log_seen++;
		fprintf(stderr, "log: line=%s who=%s sec=%llu nsec=%llu level=%s msg=%s\n", line, who,
			(unsigned long long)sec, (unsigned long long)nsec, level, msg);
		log_off_main = !pthread_equal(pthread_self(), main_thread);
		log_fields_ok = strstr(line, msg) != NULL && strcmp(level, "[INF]") == 0 &&
				strncmp(who, "client.", 7) == 0 && sec > 0 && nsec < 1000000000ull;
	}
	pthread_mutex_unlock(&log_lock);
}

static void log_cb2(void *arg, const char *line, const char *channel, const char *who,
		    const char *name, uint64_t sec, uint64_t nsec, uint64_t seq,
		    const char *level, const char *msg)
{
	(void)seq;
	(void)nsec;
	pthread_mutex_lock(&log_lock);
	if (arg == (void *)log_want && strcmp(msg, log_want) == 0) {
		log2_seen++;
		fprintf(stderr, "log2: line=%s channel=%s who=%s name=%s level=%s msg=%s\n", line, channel,
			who, name, level, msg);
		log2_fields_ok = strstr(line, msg) != NULL && strcmp(channel, "cluster") == 0 &&
				 strcmp(level, "[INF]") == 0 && strncmp(who, "client.", 7) == 0 &&
				 strncmp(name, "client.", 7) == 0 && sec > 0 &&
				 !pthread_equal(pthread_self(), main_thread);
	}
	pthread_mutex_unlock(&log_lock);
}

static int wait_seen(int *counter, int secs)
{
	int i, n = 0;
	for (i = 0; i < secs * 10; i++) {
		pthread_mutex_lock(&log_lock);
		n = *counter;
		pthread_mutex_unlock(&log_lock);
		if (n)
			break;
		usleep(100000);
	}
	return n;
}

/* The pool's "flags_names" in `osd dump` has "full". */
static int pool_full(rados_t c, const char *pool)
{
	struct reply rp = mon(c, "{\"prefix\": \"osd dump\", \"format\": \"json\"}");
	char *s = text(rp.out, rp.outlen), key[200], *at, *flags, *end;
	int full = 0;
	snprintf(key, sizeof key, "\"pool_name\":\"%s\"", pool);
	at = strstr(s, key);
	if (at && (flags = strstr(at, "\"flags_names\":\"")) && (end = strchr(flags + 15, '"'))) {
		*end = 0;
		full = strstr(flags, "full") != NULL;
	}
	free(s);
	reply_free(&rp);
	return full;
}

int main(void)
{
	rados_t c, c2;
	rados_ioctx_t io;
	char pool[64], pool2[64], pool3[64], buf[512], cmd[1024], monname[64] = "";
	struct reply rp;
	int r, i, req = -1;
	int64_t id, tier = -1;
	uint64_t align = 99;
	size_t len, klen, vlen;
	char *addrs = NULL;
	char svcname[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	main_thread = pthread_self();
	snprintf(pool, sizeof pool, "admin-c-%d", getpid());
	snprintf(pool2, sizeof pool2, "admin-c-%d-auid", getpid());
	snprintf(pool3, sizeof pool3, "admin-c-%d-all", getpid());

	SHOW("create", rados_create(&c, NULL));
	SHOW("conf_read_file", rados_conf_read_file(c, NULL));
	/* Before connecting. */
	SHOW("service_update_status before connect", rados_service_update_status(c, "a\0b\0"));
	SHOW("monitor_log before connect", rados_monitor_log(c, "info", log_cb, NULL));
	SHOW("connect", rados_connect(c));

	/* -- service registration: librados's argument checks -- */
	SHOW("service_register osd", rados_service_register(c, "osd", "x", "\0"));
	SHOW("service_register empty daemon", rados_service_register(c, "admin-svc", "", "\0"));
	snprintf(svcname, sizeof svcname, "d%d", getpid());
	SHOW("service_register", rados_service_register(c, "admin-c-svc", svcname, "purpose\0test\0"));
	SHOW("service_register again", rados_service_register(c, "admin-c-svc", svcname, "\0"));
	SHOW("service_update_status", rados_service_update_status(c, "state\0testing\0"));

	/* -- pools -- */
	SHOW("pool_create_with_crush_rule", rados_pool_create_with_crush_rule(c, pool, 0));
	SHOW("pool_create_with_crush_rule again", rados_pool_create_with_crush_rule(c, pool, 0));
	SHOW("pool_create_with_auid 5", rados_pool_create_with_auid(c, pool2, 5));
	SHOW("pool_create_with_auid default", rados_pool_create_with_auid(c, pool2, (uint64_t)-1));
	SHOW("pool_create_with_all 5", rados_pool_create_with_all(c, pool3, 5, 0));
	SHOW("pool_create_with_all default", rados_pool_create_with_all(c, pool3, (uint64_t)-1, 0));
	CHECK("pool_lookup auid pool", rados_pool_lookup(c, pool2) > 0);
	CHECK("pool_lookup all pool", rados_pool_lookup(c, pool3) > 0);
	SHOW("pool_delete auid pool", rados_pool_delete(c, pool2));
	SHOW("pool_delete all pool", rados_pool_delete(c, pool3));
	id = rados_pool_lookup(c, pool);
	CHECK("pool_lookup", id > 0);
	SHOW("pool_get_base_tier", rados_pool_get_base_tier(c, id, &tier));
	CHECK("base tier is the pool", tier == id);
	SHOW("pool_get_base_tier missing", rados_pool_get_base_tier(c, 987654, &tier));
	SHOW("ioctx_create", rados_ioctx_create(c, pool, &io));
	CHECK("ioctx_get_cluster", rados_ioctx_get_cluster(io) == c);
	r = rados_ioctx_pool_requires_alignment2(io, &req);
	printf("requires_alignment2: %d %d\n", r, req);
	r = rados_ioctx_pool_required_alignment2(io, &align);
	printf("required_alignment2: %d %llu\n", r, (unsigned long long)align);

	/* -- applications -- */
	len = sizeof buf;
	r = rados_application_list(io, buf, &len);
	printf("application_list empty: %d %zu\n", r, len);
	SHOW("application_enable", rados_application_enable(io, "adminapp", 0));
	SHOW("application_enable second", rados_application_enable(io, "adminapp2", 0));
	SHOW("application_enable second forced", rados_application_enable(io, "adminapp2", 1));
	len = 3;
	r = rados_application_list(io, buf, &len);
	printf("application_list short: %d %zu\n", r, len);
	memset(buf, 'x', sizeof buf);
	len = sizeof buf;
	r = rados_application_list(io, buf, &len);
	printf("application_list: %d %zu", r, len);
	for (i = 0; r == 0 && (size_t)i < len; i += strlen(buf + i) + 1)
		printf(" [%s]", buf + i);
	printf(" end NUL %d\n", buf[len] == 0);
	SHOW("application_metadata_set", rados_application_metadata_set(io, "adminapp", "k1", "value1"));
	SHOW("application_metadata_set k2", rados_application_metadata_set(io, "adminapp", "k2", "v2"));
	SHOW("application_metadata_set no app", rados_application_metadata_set(io, "noapp", "k", "v"));
	len = 2;
	r = rados_application_metadata_get(io, "adminapp", "k1", buf, &len);
	printf("application_metadata_get short: %d %zu\n", r, len);
	len = sizeof buf;
	r = rados_application_metadata_get(io, "adminapp", "k1", buf, &len);
	printf("application_metadata_get: %d %zu %s\n", r, len, r == 0 ? buf : "");
	len = sizeof buf;
	SHOW("application_metadata_get no key", rados_application_metadata_get(io, "adminapp", "nokey", buf, &len));
	len = sizeof buf;
	SHOW("application_metadata_get no app", rados_application_metadata_get(io, "noapp", "k1", buf, &len));
	{
		char keys[64], vals[64];
		klen = 1;
		vlen = sizeof vals;
		r = rados_application_metadata_list(io, "adminapp", keys, &klen, vals, &vlen);
		printf("application_metadata_list short: %d %zu %zu\n", r, klen, vlen);
		klen = sizeof keys;
		vlen = sizeof vals;
		r = rados_application_metadata_list(io, "adminapp", keys, &klen, vals, &vlen);
		printf("application_metadata_list: %d %zu %zu", r, klen, vlen);
		for (i = 0; r == 0 && (size_t)i < klen; i += strlen(keys + i) + 1)
			printf(" [%s]", keys + i);
		for (i = 0; r == 0 && (size_t)i < vlen; i += strlen(vals + i) + 1)
			printf(" [%s]", vals + i);
		printf("\n");
		klen = sizeof keys;
		vlen = sizeof vals;
		SHOW("application_metadata_list no app",
		     rados_application_metadata_list(io, "noapp", keys, &klen, vals, &vlen));
	}
	SHOW("application_metadata_remove", rados_application_metadata_remove(io, "adminapp", "k1"));
	len = sizeof buf;
	SHOW("application_metadata_get removed", rados_application_metadata_get(io, "adminapp", "k1", buf, &len));

	/* -- commands to a named monitor -- */
	rp = mon(c, "{\"prefix\": \"mon dump\", \"format\": \"json\"}");
	{
		char *s = text(rp.out, rp.outlen), *at = strstr(s, "\"mons\":[");
		if (at)
			at = strstr(at, "\"name\":\"");
		if (at) {
			at += 8;
			snprintf(monname, sizeof monname, "%.*s", (int)strcspn(at, "\""), at);
		}
		free(s);
	}
	reply_free(&rp);
	CHECK("mon name", monname[0] != 0);
	{
		const char *cmds[1] = {"{\"prefix\": \"mon_status\", \"format\": \"json\"}"};
		const char *fsidcmd[1] = {"{\"prefix\": \"fsid\", \"format\": \"json\"}"};
		char fsid[64], quoted[80];
		rados_cluster_fsid(c, fsid, sizeof fsid);
		snprintf(quoted, sizeof quoted, "\"name\":\"%s\"", monname);
		memset(&rp, 0, sizeof rp);
		rp.r = rados_mon_command_target(c, "0", cmds, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("mon_command_target rank 0 mon_status", rp.r);
		CHECK("mon_command_target rank 0 output", out_has(&rp, fsid) && out_has(&rp, quoted));
		reply_free(&rp);
		rp.r = rados_mon_command_target(c, monname, cmds, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("mon_command_target name mon_status", rp.r);
		CHECK("mon_command_target name output", out_has(&rp, fsid) && out_has(&rp, quoted));
		reply_free(&rp);
		rp.r = rados_mon_command_target(c, monname, fsidcmd, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("mon_command_target name fsid (not a tell command)", rp.r);
		reply_free(&rp);
		rp.r = rados_mon_command_target(c, "7", cmds, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("mon_command_target rank 7", rp.r);
		show_outs("mon_command_target rank 7", &rp);
		reply_free(&rp);
		rp.r = rados_mon_command_target(c, "nosuchmon", cmds, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("mon_command_target nosuchmon", rp.r);
		show_outs("mon_command_target nosuchmon", &rp);
		reply_free(&rp);
	}

	/* -- ping -- */
	{
		char *s = NULL;
		size_t n = 0;
		r = rados_ping_monitor(c, monname, &s, &n);
		SHOW("ping_monitor", r);
		CHECK("ping_monitor reply is JSON with health", r == 0 && n > 0 && s && s[0] == '{' &&
			memmem(s, n, "\"health\"", 8) != NULL && memmem(s, n, "\"mon_status\"", 12) != NULL);
		rados_buffer_free(s);
		SHOW("ping_monitor nosuchmon", rados_ping_monitor(c, "nosuchmon", &s, &n));
		SHOW("ping_monitor empty", rados_ping_monitor(c, "", &s, &n));
		SHOW("ping_monitor NULL", rados_ping_monitor(c, NULL, &s, &n));
	}

	/* -- OSD and PG commands -- */
	{
		const char *version[1] = {"{\"prefix\": \"version\"}"};
		memset(&rp, 0, sizeof rp);
		rp.r = rados_osd_command(c, 0, version, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("osd_command 0 version", rp.r);
		CHECK("osd_command 0 version output", out_has(&rp, "version"));
		reply_free(&rp);
		rp.r = rados_osd_command(c, 9999, version, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("osd_command 9999", rp.r);
		show_outs("osd_command 9999", &rp);
		reply_free(&rp);
		rp.r = rados_osd_command(c, -1, version, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("osd_command -1", rp.r);
		reply_free(&rp);

		/* A PG of pool test, active long since (one of a pool just
		 * made may not be on its OSD yet). */
		snprintf(buf, sizeof buf, "%lld.0", (long long)rados_pool_lookup(c, "test"));
		snprintf(cmd, sizeof cmd, "{\"prefix\": \"query\", \"pgid\": \"%s\"}", buf);
		{
			const char *query[1] = {cmd};
			rp.r = rados_pg_command(c, buf, query, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
			SHOW("pg_command query", rp.r);
			CHECK("pg_command query output", out_has(&rp, "\"state\"") && out_has(&rp, buf));
			reply_free(&rp);
			rp.r = rados_pg_command(c, "987654.0", query, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
			SHOW("pg_command no pool", rp.r);
			show_outs("pg_command no pool", &rp);
			reply_free(&rp);
			SHOW("pg_command bad pgid", rados_pg_command(c, "nonsense", query, 1, "", 0, NULL, NULL, NULL, NULL));
		}
	}

	/* -- mgr commands -- */
	{
		const char *stat[1] = {"{\"prefix\": \"pg stat\", \"format\": \"json\"}"};
		const char *bogus[1] = {"{\"prefix\": \"no such mgr command\"}"};
		memset(&rp, 0, sizeof rp);
		rp.r = rados_mgr_command(c, stat, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("mgr_command pg stat", rp.r);
		CHECK("mgr_command pg stat output", out_has(&rp, "num_pgs"));
		reply_free(&rp);
		rp.r = rados_mgr_command(c, bogus, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("mgr_command bogus", rp.r);
		reply_free(&rp);
		const char *version[1] = {"{\"prefix\": \"version\"}"};
		rp.r = rados_mgr_command_target(c, "x", version, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("mgr_command_target x version", rp.r);
		CHECK("mgr_command_target x output", out_has(&rp, "version"));
		reply_free(&rp);
		rp.r = rados_mgr_command_target(c, "x", stat, 1, "", 0, &rp.out, &rp.outlen, &rp.outs, &rp.outslen);
		SHOW("mgr_command_target x pg stat (not a tell command)", rp.r);
		reply_free(&rp);
	}
	len = sizeof buf;
	r = rados_inconsistent_pg_list(c, id, buf, len);
	SHOW("inconsistent_pg_list", r);
	CHECK("inconsistent_pg_list empty", buf[0] == 0);

	/* -- the cluster log -- */
	SHOW("monitor_log bad level", rados_monitor_log(c, "loud", log_cb, log_want));
	snprintf(log_want, sizeof log_want, "admin-c-log-%d-%ld", getpid(), (long)time(NULL));
	SHOW("monitor_log info", rados_monitor_log(c, "info", log_cb, log_want));
	snprintf(cmd, sizeof cmd, "{\"prefix\": \"log\", \"logtext\": [\"%s\"]}", log_want);
	rp = mon(c, cmd);
	SHOW("mon_command log", rp.r);
	reply_free(&rp);
	CHECK("monitor_log got the entry", wait_seen(&log_seen, 60) >= 1);
	CHECK("monitor_log callback off the caller's thread", log_off_main);
	CHECK("monitor_log fields", log_fields_ok);
	SHOW("monitor_log stop", rados_monitor_log(c, "info", NULL, NULL));
	snprintf(log_want, sizeof log_want, "admin-c-log2-%d-%ld", getpid(), (long)time(NULL));
	SHOW("monitor_log2 warning", rados_monitor_log2(c, "warning", log_cb2, log_want));
	SHOW("monitor_log2 debug", rados_monitor_log2(c, "debug", log_cb2, log_want));
	snprintf(cmd, sizeof cmd, "{\"prefix\": \"log\", \"logtext\": [\"%s\"]}", log_want);
	rp = mon(c, cmd);
	SHOW("mon_command log 2", rp.r);
	reply_free(&rp);
	CHECK("monitor_log2 got the entry", wait_seen(&log2_seen, 60) >= 1);
	CHECK("monitor_log2 fields", log2_fields_ok);
	SHOW("monitor_log2 stop", rados_monitor_log2(c, "debug", NULL, NULL));

	/* -- blocklist, addresses -- */
	SHOW("blocklist_add", rados_blocklist_add(c, "127.0.0.1:0/3141592", 60));
	SHOW("blocklist_add bad", rados_blocklist_add(c, "not an address", 60));
	r = rados_getaddrs(c, &addrs);
	SHOW("getaddrs", r);
	CHECK("getaddrs IP:PORT/NONCE", r == 0 && addrs && strlen(addrs) > 0 && strchr(addrs, '/') &&
		strchr(addrs, ':'));
	rados_buffer_free(addrs);

	/* -- the service daemon in the service map (the mgr proposes it to
	 * the monitors every few seconds) -- */
	{
		char want[128];
		int found = 0, status = 0;
		snprintf(want, sizeof want, "\"%s\"", svcname);
		for (i = 0; i < 90 && !(found && status); i++) {
			rp = mon(c, "{\"prefix\": \"service dump\", \"format\": \"json\"}");
			found = rp.r == 0 && out_has(&rp, "\"admin-c-svc\"") && out_has(&rp, want) &&
				out_has(&rp, "\"purpose\":\"test\"");
			reply_free(&rp);
			rp = mon(c, "{\"prefix\": \"service status\", \"format\": \"json\"}");
			status = rp.r == 0 && out_has(&rp, "\"testing\"");
			reply_free(&rp);
			if (!(found && status))
				sleep(1);
		}
		CHECK("service daemon in the service map", found);
		CHECK("service daemon's status", status);
	}

	/* -- a handle from this one's configuration -- */
	CHECK("cct", rados_cct(c) != NULL);
	SHOW("create_with_context", rados_create_with_context(&c2, rados_cct(c)));
	SHOW("create_with_context connect", rados_connect(c2));
	CHECK("create_with_context same fsid", rados_pool_lookup(c2, pool) == id);
	rados_shutdown(c2);

	/* -- FULL_TRY on a pool at its quota -- */
	snprintf(cmd, sizeof cmd,
		 "{\"prefix\": \"osd pool set-quota\", \"pool\": \"%s\", \"field\": \"max_objects\", \"val\": \"1\"}", pool);
	rp = mon(c, cmd);
	SHOW("set-quota max_objects 1", rp.r);
	reply_free(&rp);
	SHOW("write first object", rados_write_full(io, "admin-c-full-1", "x", 1));
	for (i = 0; i < 120 && !pool_full(c, pool); i++)
		sleep(1);
	CHECK("pool marked full", pool_full(c, pool));
	rados_wait_for_latest_osdmap(c);
	{
		rados_completion_t comp;
		rados_aio_create_completion2(NULL, NULL, &comp);
		r = rados_aio_write_full(io, "admin-c-full-2", comp, "y", 1);
		SHOW("aio_write_full on a full pool", r);
		sleep(3);
		SHOW("it waits", !rados_aio_is_complete(comp));
		rados_set_pool_full_try(io);
		SHOW("write_full with full_try", rados_write_full(io, "admin-c-full-3", "z", 1));
		rados_unset_pool_full_try(io);
		snprintf(cmd, sizeof cmd,
			 "{\"prefix\": \"osd pool set-quota\", \"pool\": \"%s\", \"field\": \"max_objects\", \"val\": \"0\"}", pool);
		rp = mon(c, cmd);
		SHOW("set-quota max_objects 0", rp.r);
		reply_free(&rp);
		rados_aio_wait_for_complete(comp);
		SHOW("the waiting write once the quota is gone", rados_aio_get_return_value(comp));
		rados_aio_release(comp);
	}

	rados_ioctx_destroy(io);
	SHOW("pool_delete", rados_pool_delete(c, pool));
	rados_shutdown(c);
	fprintf(stderr, "failures: %d\n", failures);
	return failures ? 1 : 0;
}
