//! Pools, as librados has them: created and deleted through the
//! monitors (MPoolOp), listed and looked up in the OSD map; and what
//! librados leaves to monitor commands: erasure-code profiles and
//! erasure-coded pools (`ceph osd erasure-code-profile set`, `ceph osd pool
//! create NAME PG PG erasure PROFILE`), the profiles read from the map.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use msgr_messages::pool_op::{CREATE, DELETE};
use msgr_monc::core::{PoolOpReply, PoolOpRequest};
use msgr_monc::MonError;
use msgr_transport::Transport;

use crate::client::admin::json_str;
use crate::client::Rados;
use crate::error::RadosError;
use crate::shared::lock;

/// How long a pool operation may take (`rados_mon_op_timeout` unset:
/// librados waits for ever; we give up after this).
pub const POOL_OP_TIMEOUT: Duration = Duration::from_secs(120);

const EEXIST: i32 = -17;
const EINVAL: i32 = -22;
const ENOENT: i32 = -2;

fn os(errno: i32, what: String) -> RadosError {
    RadosError::Os { errno, what }
}

impl<T: Transport> Rados<T> {
    /// Sends a pool operation and waits until it is done and this client's
    /// objecter has the map of its epoch (so what follows sees the change).
    pub(crate) async fn pool_op(
        &self,
        req: PoolOpRequest,
        what: String,
    ) -> Result<PoolOpReply, RadosError> {
        let reply = self.mon().pool_op(req, POOL_OP_TIMEOUT).await?;
        if reply.r < 0 {
            return Err(os(reply.r, what));
        }
        let map = self.mon().wait_osdmap(reply.epoch, POOL_OP_TIMEOUT).await?;
        let behind = lock(&self.shared.objecter).map().epoch < map.epoch;
        if behind {
            lock(&self.shared.objecter).handle_map(map);
            self.shared.place_aside().await;
        }
        Ok(reply)
    }

    /// Creates a replicated pool `name` with the monitors' defaults
    /// (`rados_pool_create`); its id.
    ///
    /// ```no_run
    /// # async fn f(rados: &msgr_rados::Rados) -> Result<(), msgr_rados::RadosError> {
    /// let id = rados.pool_create("scratch", None).await?;
    /// assert_eq!(rados.pool_lookup("scratch"), Some(id));
    /// rados.pool_delete("scratch").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// With `crush_rule`, its PGs are placed by that CRUSH rule
    /// (`rados_pool_create_with_crush_rule`); `None`: the default rule.
    /// EEXIST if a pool of that name exists.
    pub async fn pool_create(&self, name: &str, crush_rule: Option<u8>) -> Result<i64, RadosError> {
        let what = format!("creating pool {name}");
        if self.pool_lookup(name).is_some() {
            return Err(os(EEXIST, what));
        }
        let req = PoolOpRequest {
            op: CREATE,
            pool: 0,
            name: name.to_string(),
            snapid: 0,
            crush_rule: crush_rule.map_or(-1, i16::from),
        };
        self.pool_op(req, what.clone()).await?;
        self.pool_lookup(name)
            .ok_or_else(|| RadosError::NoPool(format!("{name} (created, but not in the new map)")))
    }

    /// Deletes pool `name` and all its objects (`rados_pool_delete`; the
    /// monitors must allow it: `mon_allow_pool_delete`). ENOENT if there is
    /// no such pool.
    pub async fn pool_delete(&self, name: &str) -> Result<(), RadosError> {
        let what = format!("deleting pool {name}");
        let pool = self
            .pool_lookup(name)
            .ok_or_else(|| os(ENOENT, what.clone()))?;
        let pool = u32::try_from(pool).map_err(|_| os(EINVAL, what.clone()))?;
        let req = PoolOpRequest {
            op: DELETE,
            pool,
            name: "delete".to_string(),
            snapid: 0,
            crush_rule: 0,
        };
        self.pool_op(req, what).await.map(drop)
    }

    /// Every pool, `(id, name)`, by id (`rados_pool_list`).
    pub fn pool_list(&self) -> Vec<(i64, String)> {
        let map = self.osdmap();
        map.pool_names
            .iter()
            .filter(|(id, _)| map.pools.contains_key(id))
            .map(|(id, n)| (*id, n.clone()))
            .collect()
    }

    /// The id of pool `name` (`rados_pool_lookup`).
    pub fn pool_lookup(&self, name: &str) -> Option<i64> {
        self.osdmap().pool_id(name)
    }

    /// The name of pool `id` (`rados_pool_reverse_lookup`).
    pub fn pool_reverse_lookup(&self, id: i64) -> Option<String> {
        let map = self.osdmap();
        map.pools.get(&id)?;
        map.pool_names.get(&id).cloned()
    }

    /// Sets erasure-code profile `name` (`ceph osd erasure-code-profile
    /// set NAME K=V...`): `k`, `m`, `plugin`, `crush-failure-domain`, ...
    /// as the plugin takes them; then waits for the map that holds it.
    /// The monitors refuse (EPERM) to change a profile a pool uses.
    ///
    /// ```no_run
    /// # async fn f(rados: &msgr_rados::Rados) -> Result<(), msgr_rados::RadosError> {
    /// rados
    ///     .erasure_code_profile_set("k2m1", &[("k", "2"), ("m", "1"), ("crush-failure-domain", "osd")])
    ///     .await?;
    /// let id = rados.pool_create_erasure("ecpool", "k2m1", 16).await?;
    /// let io = rados.ioctx("ecpool")?;
    /// assert!(io.requires_alignment()?);
    /// # Ok(()) }
    /// ```
    pub async fn erasure_code_profile_set(
        &self,
        name: &str,
        profile: &[(&str, &str)],
    ) -> Result<(), RadosError> {
        if let Some((k, _)) = profile
            .iter()
            .find(|(k, _)| k.is_empty() || k.contains('='))
        {
            return Err(os(
                EINVAL,
                format!("erasure-code profile {name}: key {k:?} is empty or has a '='"),
            ));
        }
        let kv: Vec<String> = profile
            .iter()
            .map(|(k, v)| json_str(&format!("{k}={v}")))
            .collect();
        self.mon_command_ok(format!(
            "{{\"prefix\": \"osd erasure-code-profile set\", \"name\": {}, \"profile\": [{}]}}",
            json_str(name),
            kv.join(", ")
        ))
        .await?;
        self.wait_for_latest_osdmap().await.map(drop)
    }

    /// Erasure-code profile `name` as the map has it (`ceph osd
    /// erasure-code-profile get`); ENOENT if there is none.
    pub fn erasure_code_profile_get(
        &self,
        name: &str,
    ) -> Result<BTreeMap<String, String>, RadosError> {
        self.osdmap()
            .erasure_code_profiles
            .get(name)
            .cloned()
            .ok_or_else(|| os(ENOENT, format!("erasure-code profile {name}")))
    }

    /// The erasure-code profiles' names (`ceph osd erasure-code-profile
    /// ls`).
    pub fn erasure_code_profile_list(&self) -> Vec<String> {
        self.osdmap()
            .erasure_code_profiles
            .keys()
            .cloned()
            .collect()
    }

    /// Removes erasure-code profile `name` (`ceph osd erasure-code-profile
    /// rm`); the monitors refuse (EBUSY) while a pool uses it.
    pub async fn erasure_code_profile_remove(&self, name: &str) -> Result<(), RadosError> {
        self.mon_command_ok(format!(
            "{{\"prefix\": \"osd erasure-code-profile rm\", \"name\": {}}}",
            json_str(name)
        ))
        .await?;
        self.wait_for_latest_osdmap().await.map(drop)
    }

    /// Creates erasure-coded pool `name` of `pg_num` PGs with erasure-code
    /// profile `profile` (`ceph osd pool create NAME PG PG erasure
    /// PROFILE`; the monitors make its CRUSH rule); its id once this
    /// client's map has it. EEXIST if a pool of that name exists, ENOENT if
    /// there is no such profile.
    pub async fn pool_create_erasure(
        &self,
        name: &str,
        profile: &str,
        pg_num: u32,
    ) -> Result<i64, RadosError> {
        let what = format!("creating erasure-coded pool {name}");
        if self.pool_lookup(name).is_some() {
            return Err(os(EEXIST, what));
        }
        self.erasure_code_profile_get(profile)
            .map_err(|_| os(ENOENT, format!("{what}: no erasure-code profile {profile}")))?;
        self.mon_command_ok(format!(
            "{{\"prefix\": \"osd pool create\", \"pool\": {}, \"pg_num\": {pg_num}, \
             \"pgp_num\": {pg_num}, \"pool_type\": \"erasure\", \"erasure_code_profile\": {}}}",
            json_str(name),
            json_str(profile)
        ))
        .await?;
        self.wait_for_latest_osdmap().await?;
        self.pool_lookup(name)
            .ok_or_else(|| RadosError::NoPool(format!("{name} (created, but not in the new map)")))
    }

    /// A monitor command that must succeed.
    async fn mon_command_ok(&self, cmd: String) -> Result<(), RadosError> {
        let r = self
            .mon()
            .command(&cmd, Bytes::new(), POOL_OP_TIMEOUT)
            .await?;
        if r.r < 0 {
            return Err(RadosError::Mon(MonError::Command {
                cmd,
                r: r.r,
                rs: r.rs,
            }));
        }
        Ok(())
    }
}
